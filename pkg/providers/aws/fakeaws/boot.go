package fakeaws

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// BootNode is what a node reads from its user data: the cluster it joins and how it registers.
type BootNode struct {
	ClusterName, ClusterEndpoint string
	// ClusterCABundle is base64 PEM ("" when the document leaves it to the node).
	ClusterCABundle string
	Labels          map[string]string
	Taints          []corev1.Taint
	// MaxPods is the kubelet's max pods (0: the instance type's).
	MaxPods int32
}

// BootOptions configure how instances boot into Nodes.
type BootOptions struct {
	// ClusterName, ClusterEndpoint and ClusterCABundle are the cluster the Nodes join: a node whose user data
	// names another cluster, API server or CA never joins (an endpoint or CA the document leaves out is
	// looked up by the node, and matches).
	ClusterName, ClusterEndpoint, ClusterCABundle string
	// Parse reads an instance's user data for an AMI family as the node's bootstrap would. Required.
	Parse func(family, doc string) (BootNode, error)
	// FamilyOf names the AMI family of an image ("AL2023", "AL2", "Bottlerocket", ...). Default: from the
	// name of the fake's image (EKS-optimized names); an image the fake doesn't know has no family and
	// its instances never join.
	FamilyOf func(imageID string) string
	// Log receives why an instance didn't join. Default discards.
	Log logr.Logger
}

// booter turns started instances into kwok-managed Nodes and deletes them when the instances terminate.
type booter struct {
	client client.Client
	opts   BootOptions
	region string
	types  map[string]*cloudprovider.InstanceType
	zones  map[string]string // zone → zone ID
	wg     sync.WaitGroup
}

// kwokNodeAnnotationKey makes kwok play the Node's kubelet.
const kwokNodeAnnotationKey = "kwok.x-k8s.io/node"

// BootNodesInto makes every instance started from now on boot like a node: its user data is read with
// opts.Parse and, when it names opts.ClusterName, a kwok-managed Node with provider ID
// aws:///<zone>/<instance-id>, the user data's labels and taints and the instance type's capacity is
// registered through c. Terminating the instance deletes its Node.
func (s *Server) BootNodesInto(c client.Client, opts BootOptions) error {
	if opts.Parse == nil {
		return errors.New("booting instances needs a user data parser")
	}
	if opts.FamilyOf == nil {
		opts.FamilyOf = s.familyOfImage
	}
	its, err := catalog.EC2(catalog.EC2Options{Region: s.opts.Region, Zones: s.opts.Zones})
	if err != nil {
		return fmt.Errorf("loading the EC2 catalog, %w", err)
	}
	b := &booter{client: c, opts: opts, region: s.opts.Region, types: map[string]*cloudprovider.InstanceType{}, zones: map[string]string{}}
	for _, it := range its {
		b.types[it.Name] = it
	}
	for _, z := range s.opts.Zones {
		b.zones[z] = s.ZoneID(z)
	}
	s.withState(func(st *state) { st.instances.boot = b })
	return nil
}

// WaitForBoots waits until every boot and shutdown started so far has written to the cluster.
func (s *Server) WaitForBoots() {
	var b *booter
	s.withState(func(st *state) { b = st.instances.boot })
	if b != nil {
		b.wg.Wait()
	}
}

func (b *booter) start(in Instance) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.boot(context.Background(), in); err != nil {
			b.opts.Log.Info("instance never joins the cluster", "instanceID", in.ID, "reason", err.Error())
		}
	}()
}

func (b *booter) shutdown(in Instance) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName}}
		if err := b.client.Delete(context.Background(), node); client.IgnoreNotFound(err) != nil {
			b.opts.Log.Error(err, "deleting the node of a terminated instance", "instanceID", in.ID)
		}
	}()
}

// boot reads the user data and registers the Node.
func (b *booter) boot(ctx context.Context, in Instance) error {
	doc, err := base64.StdEncoding.DecodeString(in.UserData)
	if err != nil {
		return fmt.Errorf("user data is not base64, %w", err)
	}
	family := b.opts.FamilyOf(in.ImageID)
	parsed, err := b.opts.Parse(family, string(doc))
	if err != nil {
		return fmt.Errorf("reading %s user data, %w", family, err)
	}
	if err := b.joins(parsed); err != nil {
		return err
	}
	it, ok := b.types[in.InstanceType]
	if !ok {
		return fmt.Errorf("instance type %q is not in the catalog", in.InstanceType)
	}
	node := b.node(in, it, parsed)
	status := node.Status.DeepCopy()
	if err := b.client.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating node, %w", err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.Capacity, node.Status.Allocatable, node.Status.NodeInfo = status.Capacity, status.Allocatable, status.NodeInfo
	if err := b.client.Status().Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("writing node capacity, %w", err)
	}
	return nil
}

// node is the Node a kubelet on the instance registers: the type's labels and the kubelet's well-known
// ones, then the user data's labels and taints.
func (b *booter) node(in Instance, it *cloudprovider.InstanceType, parsed BootNode) *corev1.Node {
	labels := it.Requirements.Labels()
	delete(labels, v1.LabelTopologyZone)
	delete(labels, v1.CapacityTypeLabelKey)
	labels[v1.LabelInstanceType] = in.InstanceType
	labels[v1.LabelTopologyZone] = in.Zone
	labels[v1.LabelTopologyRegion] = b.region
	labels[v1.LabelHostname] = in.PrivateDNSName
	if id := b.zones[in.Zone]; id != "" {
		labels["topology.k8s.aws/zone-id"] = id
	}
	v1.AddBetaLabels(labels)
	maps.Copy(labels, parsed.Labels)
	capacity, allocatable := it.Capacity.DeepCopy(), it.Allocatable()
	if parsed.MaxPods > 0 {
		capacity[corev1.ResourcePods] = *resource.NewQuantity(int64(parsed.MaxPods), resource.DecimalSI)
		allocatable[corev1.ResourcePods] = *resource.NewQuantity(int64(parsed.MaxPods), resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        in.PrivateDNSName,
			Labels:      labels,
			Annotations: map[string]string{kwokNodeAnnotationKey: "fake"},
		},
		Spec: corev1.NodeSpec{ProviderID: "aws:///" + in.Zone + "/" + in.ID, Taints: parsed.Taints},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: allocatable,
			NodeInfo: corev1.NodeSystemInfo{Architecture: labels[v1.LabelArch], OperatingSystem: labels[v1.LabelOS]},
		},
	}
}

// joins says why a node that read parsed would not join the cluster.
func (b *booter) joins(parsed BootNode) error {
	switch {
	case parsed.ClusterName != b.opts.ClusterName:
		return fmt.Errorf("user data joins cluster %q, not %q", parsed.ClusterName, b.opts.ClusterName)
	case parsed.ClusterEndpoint != "" && b.opts.ClusterEndpoint != "" && parsed.ClusterEndpoint != b.opts.ClusterEndpoint:
		return fmt.Errorf("user data names API server %q, not %q", parsed.ClusterEndpoint, b.opts.ClusterEndpoint)
	case parsed.ClusterCABundle != "" && b.opts.ClusterCABundle != "" && parsed.ClusterCABundle != b.opts.ClusterCABundle:
		return errors.New("user data carries another cluster CA bundle")
	}
	return nil
}
