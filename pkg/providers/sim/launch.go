package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// offeringChoice is one instance type bought through one of its offerings.
type offeringChoice struct {
	instanceType *cloudprovider.InstanceType
	offering     cloudprovider.Offering
}

func (o offeringChoice) key() offeringKey {
	return offeringKey{instanceType: o.instanceType.Name, zone: o.offering.Zone, capacityType: o.offering.CapacityType}
}

func nodeClaimRequirements(nodeClaim *v1.NodeClaim) (scheduling.Requirements, error) {
	reqs, err := scheduling.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		return nil, cloudprovider.NewCreateError(fmt.Errorf("parsing requirements of nodeclaim %q, %w", nodeClaim.Name, err),
			"InvalidRequirements", "The NodeClaim's requirements can't be parsed")
	}
	return reqs, nil
}

// chooseOffering walks the offerings the NodeClaim allows from the cheapest, as an EC2 Fleet with the
// lowest-price strategy would: an offering without capacity is remembered as unavailable and the next one is
// tried. It returns an InsufficientCapacityError when none has capacity.
func (c *CloudProvider) chooseOffering(ctx context.Context, nodeClaim *v1.NodeClaim, its cloudprovider.InstanceTypes, reqs scheduling.Requirements, injected injection) (offeringChoice, error) {
	now := c.clock.Now()
	// Matching the requirements is most of the work, and needs no lock: the launches of a burst would
	// otherwise wait on each other here.
	allowed := c.allowedOfferings(nodeClaim, its, reqs)
	c.mu.Lock()
	defer c.mu.Unlock()
	tried := 0
	for _, candidate := range allowed {
		if c.capacity.isUnavailable(candidate.key(), now) {
			continue
		}
		tried++
		if !injected.has(candidate.key()) {
			return candidate, nil
		}
		c.capacity.markUnavailable(candidate.key(), now.Add(UnavailableOfferingsTTL))
		log.FromContext(ctx).Info("offering has insufficient capacity, marking it unavailable", "NodeClaim", nodeClaim.Name,
			"instanceType", candidate.instanceType.Name, "zone", candidate.offering.Zone, "capacityType", candidate.offering.CapacityType,
			"ttl", UnavailableOfferingsTTL.String())
	}
	if tried == 0 {
		return offeringChoice{}, cloudprovider.NewInsufficientCapacityError(
			fmt.Errorf("no available offering of an instance type that fits nodeclaim %q", nodeClaim.Name))
	}
	return offeringChoice{}, cloudprovider.NewInsufficientCapacityError(
		fmt.Errorf("all %d offerings nodeclaim %q allows are out of capacity", tried, nodeClaim.Name))
}

// allowedOfferings lists the available offerings of the instance types whose labels meet the requirements
// and whose allocatable holds the requests, cheapest first, whether or not they are out of capacity.
func (c *CloudProvider) allowedOfferings(nodeClaim *v1.NodeClaim, its cloudprovider.InstanceTypes, reqs scheduling.Requirements) []offeringChoice {
	var out []offeringChoice
	for _, it := range its.Compatible(reqs) {
		if !scheduling.Fits(nodeClaim.Spec.Resources.Requests, it.Allocatable()) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && o.IsCompatible(reqs) && c.zoneIDAllowed(reqs, o.Zone) {
				out = append(out, offeringChoice{instanceType: it, offering: o})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b offeringChoice) int {
		return cmp.Or(cmp.Compare(a.offering.Price, b.offering.Price), strings.Compare(a.instanceType.Name, b.instanceType.Name),
			strings.Compare(a.offering.Zone, b.offering.Zone), strings.Compare(a.offering.CapacityType, b.offering.CapacityType))
	})
	return out
}

func (c *CloudProvider) zoneIDAllowed(reqs scheduling.Requirements, zone string) bool {
	if !reqs.Has(awsv1.LabelTopologyZoneID) {
		return true
	}
	return reqs.Get(awsv1.LabelTopologyZoneID).Has(c.zoneIDs[zone])
}

// newNode builds the Node that stands for an instance of the choice launched for the NodeClaim.
func (c *CloudProvider) newNode(nodeClaim *v1.NodeClaim, choice offeringChoice, amis map[string]string) *corev1.Node {
	id := newInstanceID()
	labels := map[string]string{}
	for k, v := range nodeClaim.Labels {
		labels[k] = v
	}
	for k, v := range choice.instanceType.Requirements.Labels() {
		labels[k] = v
	}
	labels[v1.LabelInstanceType] = choice.instanceType.Name
	labels[v1.LabelTopologyZone] = choice.offering.Zone
	labels[v1.LabelTopologyRegion] = c.region
	labels[v1.CapacityTypeLabelKey] = choice.offering.CapacityType
	labels[v1.LabelHostname] = nodeClaim.Name
	if zoneID, ok := c.zoneIDs[choice.offering.Zone]; ok {
		labels[awsv1.LabelTopologyZoneID] = zoneID
	}
	labels[NodeClaimLabelKey] = nodeClaim.Name
	labels[InstanceIDLabelKey] = id
	v1.AddBetaLabels(labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   nodeClaim.Name,
			Labels: labels,
			Annotations: map[string]string{
				KwokNodeAnnotationKey: "fake",
				ImageIDAnnotationKey:  amis[labels[v1.LabelArch]],
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: ProviderIDPrefix + "/" + choice.offering.Zone + "/" + id,
			Taints:     nodeTaints(nodeClaim),
		},
		Status: corev1.NodeStatus{
			Capacity:    choice.instanceType.Capacity.DeepCopy(),
			Allocatable: choice.instanceType.Allocatable(),
			NodeInfo:    corev1.NodeSystemInfo{Architecture: labels[v1.LabelArch], OperatingSystem: labels[v1.LabelOS]},
		},
	}
}

// nodeTaints is the unregistered taint plus the NodeClaim's taints and startup taints, without duplicates.
func nodeTaints(nodeClaim *v1.NodeClaim) []corev1.Taint {
	out := []corev1.Taint{v1.UnregisteredNoExecuteTaint}
	for _, t := range slices.Concat(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints) {
		if !slices.ContainsFunc(out, func(have corev1.Taint) bool { return have.MatchTaint(&t) }) {
			out = append(out, t)
		}
	}
	return out
}

// resolveNodeClass checks the NodeClaim's EC2NodeClass is Ready, as the AWS provider does, and returns it
// with the image to boot per architecture. NodeClaims of other node class kinds launch with the simulated
// images (and a nil node class).
func (c *CloudProvider) resolveNodeClass(ctx context.Context, nodeClaim *v1.NodeClaim) (*awsv1.EC2NodeClass, map[string]string, error) {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != ec2NodeClassKind {
		return nil, simulatedAMIs(), nil
	}
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.client.Get(ctx, objectKey(ref.Name), nodeClass); err != nil {
		// As in the AWS provider, a node class that can't be found leaves the NodeClaim no capacity.
		return nil, nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("resolving nodeclass %q, %w", ref.Name, err))
	}
	ready := meta.FindStatusCondition(nodeClass.Status.Conditions, awsv1.ConditionTypeReady)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		return nil, nil, cloudprovider.NewCreateError(fmt.Errorf("nodeclass %q readiness is unknown", ref.Name),
			"NodeClassReadinessUnknown", "NodeClass is in Ready=Unknown")
	case ready.Status == metav1.ConditionFalse:
		return nil, nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeclass %q is not ready, %s", ref.Name, ready.Message))
	}
	amis := simulatedAMIs()
	for _, ami := range nodeClass.Status.AMIs {
		for _, r := range ami.Requirements {
			if r.Key == v1.LabelArch && r.Operator == corev1.NodeSelectorOpIn {
				for _, arch := range r.Values {
					amis[arch] = ami.ID
				}
			}
		}
	}
	return nodeClass, amis, nil
}
