package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/launchtemplate"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Create launches the NodeClaim's instance (or finds the one already launched for it) and returns the
// NodeClaim with its provider ID, image, labels, capacity and allocatable.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	nodeClass, err := c.readyNodeClass(ctx, nodeClaim)
	if err != nil {
		return nil, err
	}
	its, err := c.instanceTypes.List(ctx, nodeClass)
	if err != nil {
		return nil, fmt.Errorf("listing instance types, %w", err)
	}
	its = withSubnetZones(its, nodeClass)
	reqs, err := scheduling.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		return nil, cloudprovider.NewCreateError(err, "InvalidRequirements", "The NodeClaim's requirements can't be parsed")
	}
	candidates := cloudprovider.InstanceTypes(its).Compatible(reqs)
	candidates = slices.DeleteFunc(slices.Clone(candidates), func(it *cloudprovider.InstanceType) bool {
		return !scheduling.Fits(nodeClaim.Spec.Resources.Requests, it.Allocatable())
	})
	candidates = candidates.OrderByPrice(reqs).Truncate(instance.MaxInstanceTypes)
	in, err := c.launch(ctx, nodeClaim, nodeClass, candidates, reqs)
	if err != nil && cloudprovider.IsInsufficientCapacityError(err) && chooseCapacityType(candidates, reqs) == v1.CapacityTypeReserved {
		// The reservations were full: fall back to the other capacity types the NodeClaim allows.
		if rest, ok := withoutReserved(reqs); ok {
			log.FromContext(ctx).V(1).Info("capacity reservations are full, falling back", "NodeClaim", nodeClaim.Name, "error", err.Error())
			in, err = c.launch(ctx, nodeClaim, nodeClass, candidates.Compatible(rest), rest)
		}
	}
	if err != nil {
		return nil, err
	}
	log.FromContext(ctx).V(1).Info("launched instance", "NodeClaim", nodeClaim.Name, "providerID", in.ProviderID(),
		"instanceType", in.InstanceType, "zone", in.Zone, "capacityType", in.CapacityType)
	return launched(nodeClaim, nodeClass, in, its), nil
}

// launch launches the NodeClaim's instance with the capacity type chooseCapacityType picks; a reserved
// launch that finds its reservations full marks them so.
func (c *CloudProvider) launch(ctx context.Context, nodeClaim *v1.NodeClaim, nodeClass *awsv1.EC2NodeClass,
	candidates cloudprovider.InstanceTypes, reqs scheduling.Requirements) (*instance.Instance, error) {
	if len(candidates) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no available instance type fits nodeclaim %q", nodeClaim.Name))
	}
	capacityType := chooseCapacityType(candidates, reqs)
	req, err := c.launchRequest(ctx, nodeClaim, nodeClass, candidates, reqs, capacityType)
	if err != nil {
		return nil, err
	}
	in, err := c.instances.Create(ctx, req)
	if hasCode(err, "InvalidLaunchTemplateName.NotFoundException") {
		// A template deleted behind our back: forget them and launch again with fresh ones.
		for _, o := range req.Overrides {
			c.templates.Forget(o.LaunchTemplate)
		}
		if req, err = c.launchRequest(ctx, nodeClaim, nodeClass, candidates, reqs, capacityType); err == nil {
			in, err = c.instances.Create(ctx, req)
		}
	}
	if capacityType == v1.CapacityTypeReserved && c.reservations != nil {
		c.markReservations(req, in, err)
	}
	return in, err
}

// markReservations counts a launch into a reservation, or marks every reservation of a launch that found
// them all full.
func (c *CloudProvider) markReservations(req instance.Request, in *instance.Instance, err error) {
	switch {
	case err == nil && in != nil && in.CapacityReservationID != "":
		c.reservations.MarkLaunched(in.CapacityReservationID)
	case cloudprovider.IsInsufficientCapacityError(err):
		var ids []string
		for _, o := range req.Overrides {
			ids = append(ids, o.ReservationID)
		}
		c.reservations.MarkUnavailable(ids...)
	}
}

// readyNodeClass returns the NodeClaim's EC2NodeClass once it is Ready with subnets resolved.
func (c *CloudProvider) readyNodeClass(ctx context.Context, nodeClaim *v1.NodeClaim) (*awsv1.EC2NodeClass, error) {
	nodeClass, err := c.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("resolving nodeclass, %w", err))
	}
	ready := meta.FindStatusCondition(nodeClass.Status.Conditions, awsv1.ConditionTypeReady)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		return nil, cloudprovider.NewCreateError(fmt.Errorf("nodeclass %q readiness is unknown", nodeClass.Name),
			"NodeClassReadinessUnknown", "NodeClass is in Ready=Unknown")
	case ready.Status == metav1.ConditionFalse:
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeclass %q is not ready, %s", nodeClass.Name, ready.Message))
	case len(nodeClass.Status.Subnets) == 0:
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeclass %q has no subnets: no subnet matches %s",
			nodeClass.Name, selectorText(nodeClass.Spec.SubnetSelectorTerms)))
	case len(nodeClass.Status.AMIs) == 0:
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeclass %q has no AMIs", nodeClass.Name))
	}
	return nodeClass, nil
}

// chooseCapacityType is, as Karpenter's, reserved when the NodeClaim allows it and a candidate has an
// available reserved offering it allows, else spot likewise, else on-demand.
func chooseCapacityType(its cloudprovider.InstanceTypes, reqs scheduling.Requirements) string {
	for _, ct := range []string{v1.CapacityTypeReserved, v1.CapacityTypeSpot} {
		for _, it := range its {
			for _, o := range it.Offerings.Available().Compatible(reqs) {
				if o.CapacityType == ct {
					return ct
				}
			}
		}
	}
	return v1.CapacityTypeOnDemand
}

// launchRequest builds the fleet's overrides (each candidate × the first subnet of each allowed zone,
// from the launch template of the type's AMI) and tags.
func (c *CloudProvider) launchRequest(ctx context.Context, nodeClaim *v1.NodeClaim, nodeClass *awsv1.EC2NodeClass,
	its cloudprovider.InstanceTypes, reqs scheduling.Requirements, capacityType string) (instance.Request, error) {
	subnets := c.zonalSubnets(ctx, nodeClass)
	zoneIDs := map[string]string{}
	for _, s := range nodeClass.Status.Subnets {
		zoneIDs[s.Zone] = s.ZoneID
	}
	tags := c.tags(nodeClaim, nodeClass)
	templates := map[string]string{} // image (and reservation) → template
	req := instance.Request{NodeClaimName: nodeClaim.Name, NodeClaimUID: string(nodeClaim.UID), CapacityType: capacityType, Tags: tags}
	var reserved map[string]cloudprovider.Offering
	if capacityType == v1.CapacityTypeReserved {
		req.Reservation, reserved = reservedOfferings(its, reqs)
	}
	for _, it := range its {
		image := imageFor(nodeClass, it)
		if image == "" {
			continue
		}
		for _, o := range it.Offerings.Available().Compatible(reqs) {
			subnet, ok := subnets[o.Zone]
			if o.CapacityType != capacityType || !ok {
				continue
			}
			var reservation *launchtemplate.Reservation
			if capacityType == v1.CapacityTypeReserved {
				if r, ok := reserved[it.Name+"/"+o.Zone]; !ok || r.ReservationID() != o.ReservationID() {
					continue
				}
				reservation = templateReservation(o)
			}
			key := image + "/" + o.ReservationID()
			if _, ok := templates[key]; !ok {
				name, err := c.ensureTemplate(ctx, nodeClaim, nodeClass, image, tags, capacityType == v1.CapacityTypeSpot, reservation)
				if err != nil {
					return req, err
				}
				templates[key] = name
			}
			req.Overrides = append(req.Overrides, instance.Override{LaunchTemplate: templates[key], InstanceType: it.Name,
				Zone: o.Zone, ZoneID: zoneIDs[o.Zone], SubnetID: subnet, ImageID: image, Price: o.Price, ReservationID: o.ReservationID()})
		}
	}
	if len(req.Overrides) == 0 {
		return req, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no AMI of nodeclass %q serves the instance types nodeclaim %q allows",
			nodeClass.Name, nodeClaim.Name))
	}
	return req, nil
}

// tags are the instance's: Karpenter's static tags and the node class's (which can't override them).
func (c *CloudProvider) tags(nodeClaim *v1.NodeClaim, nodeClass *awsv1.EC2NodeClass) map[string]string {
	out := maps.Clone(nodeClass.Spec.Tags)
	if out == nil {
		out = map[string]string{}
	}
	out[instance.NodePoolTagKey] = nodeClaim.Labels[v1.NodePoolLabelKey]
	out[instance.NodeClassTagKey] = nodeClass.Name
	out[instance.ClusterTagKey(c.clusterName)] = "owned"
	out[instance.EKSClusterTagKey] = c.clusterName
	return out
}

// imageFor is the first non-deprecated AMI of the node class whose requirements the type meets.
func imageFor(nodeClass *awsv1.EC2NodeClass, it *cloudprovider.InstanceType) string {
	for _, deprecated := range []bool{false, true} {
		for _, ami := range nodeClass.Status.AMIs {
			if ami.Deprecated != deprecated {
				continue
			}
			reqs, err := scheduling.FromNodeSelectorRequirements(ami.Requirements)
			if err == nil && it.Requirements.Intersects(reqs) == nil {
				return ami.ID
			}
		}
	}
	return ""
}

// ensureTemplate renders the node's user data and ensures the launch template for it and the image.
// tags are the instance's, which the template carries too (see launchtemplate.Input.Tags).
func (c *CloudProvider) ensureTemplate(ctx context.Context, nodeClaim *v1.NodeClaim, nodeClass *awsv1.EC2NodeClass, image string,
	tags map[string]string, spot bool, reservation *launchtemplate.Reservation) (string, error) {
	doc, err := c.userData(UserDataInput{
		NodeClass: nodeClass, Family: nodeClass.AMIFamily(), ClusterName: c.clusterName, ClusterEndpoint: c.clusterEndpoint,
		ClusterCABundle: c.clusterCABundle, ClusterDNS: c.clusterDNS, ClusterCIDR: c.clusterCIDR, Labels: nodeLabels(nodeClaim), Taints: nodeTaints(nodeClaim),
	})
	if err != nil {
		return "", cloudprovider.NewCreateError(err, "UserDataFailed", "Rendering the node's user data failed")
	}
	name, err := c.templates.Ensure(ctx, launchtemplate.Input{
		NodeClassName: nodeClass.Name, ImageID: image, UserData: doc, SecurityGroupIDs: securityGroupIDs(nodeClass),
		InstanceProfile: nodeClass.Status.InstanceProfile, BlockDevices: nodeClass.Spec.BlockDeviceMappings,
		Metadata: nodeClass.Spec.MetadataOptions, AssociatePublicIP: nodeClass.Spec.AssociatePublicIPAddress,
		DetailedMonitoring: nodeClass.Spec.DetailedMonitoring != nil && *nodeClass.Spec.DetailedMonitoring, Tags: tags, TagSpotRequests: spot,
		CapacityReservation: reservation, OptOutOfOpenReservations: c.reservations != nil && reservation == nil,
	})
	if err != nil {
		return "", fmt.Errorf("ensuring launch template, %w", err)
	}
	return name, nil
}

func securityGroupIDs(nodeClass *awsv1.EC2NodeClass) []string {
	var out []string
	for _, sg := range nodeClass.Status.SecurityGroups {
		out = append(out, sg.ID)
	}
	return out
}

// nodeLabels are the labels the node registers with: the NodeClaim's.
func nodeLabels(nodeClaim *v1.NodeClaim) map[string]string {
	out := maps.Clone(nodeClaim.Labels)
	if out == nil {
		out = map[string]string{}
	}
	return out
}

// nodeTaints are the unregistered taint plus the NodeClaim's taints and startup taints.
func nodeTaints(nodeClaim *v1.NodeClaim) []corev1.Taint {
	out := []corev1.Taint{v1.UnregisteredNoExecuteTaint}
	for _, t := range slices.Concat(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints) {
		if !slices.ContainsFunc(out, func(have corev1.Taint) bool { return have.MatchTaint(&t) }) {
			out = append(out, t)
		}
	}
	return out
}

// launched is the NodeClaim as launched: provider ID, image, the type's labels with zone and capacity
// type, capacity and allocatable, and the node class hash it launched with.
func launched(nodeClaim *v1.NodeClaim, nodeClass *awsv1.EC2NodeClass, in *instance.Instance, its cloudprovider.InstanceTypes) *v1.NodeClaim {
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if it := its.Named(in.InstanceType); it != nil {
		for k, v := range it.Requirements.Labels() {
			out.Labels[k] = v
		}
		out.Status.Capacity = it.Capacity.DeepCopy()
		out.Status.Allocatable = it.Allocatable()
	}
	out.Labels[v1.LabelInstanceType] = in.InstanceType
	out.Labels[v1.LabelTopologyZone] = in.Zone
	out.Labels[v1.CapacityTypeLabelKey] = in.CapacityType
	for _, k := range reservationLabelKeys {
		delete(out.Labels, k)
	}
	if in.CapacityReservationID != "" {
		maps.Copy(out.Labels, reservationLabels(nodeClass, in.CapacityReservationID))
	}
	for _, s := range nodeClass.Status.Subnets {
		if s.Zone == in.Zone && s.ZoneID != "" {
			out.Labels[awsv1.LabelTopologyZoneID] = s.ZoneID
		}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for _, k := range []string{awsv1.AnnotationEC2NodeClassHash, awsv1.AnnotationEC2NodeClassHashVersion} {
		if v, ok := nodeClass.Annotations[k]; ok {
			out.Annotations[k] = v
		}
	}
	out.Status.ProviderID = in.ProviderID()
	out.Status.ImageID = in.ImageID
	return out
}

func hasCode(err error, code string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}
