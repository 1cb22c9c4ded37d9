package solver

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Input is everything a scheduling decision depends on. Solve does not modify it.
type Input struct {
	// Pods to place.
	Pods []*corev1.Pod
	// NodePools new NodeClaims may come from.
	NodePools []*v1.NodePool
	// InstanceTypes each NodePool may launch, by NodePool name.
	InstanceTypes map[string]cloudprovider.InstanceTypes
	// Nodes already in the cluster, with the pods bound to them.
	Nodes []ExistingNode
	// InFlight NodeClaims launched but not yet nodes, with pods already nominated to them.
	InFlight []InFlightNodeClaim
	// DaemonSets whose pods will run on new nodes they are compatible with.
	DaemonSets []*appsv1.DaemonSet
	// Volumes resolve the zones a pod's persistent volume claims restrict it to.
	Volumes Volumes
	// EarlierPlaces names, for pending pods an earlier plan put on one of Nodes or InFlight, that node or
	// NodeClaim (a node when both have the name). Such a pod is put back there when it still fits, and only
	// pods needing a host of their own may take its room first (keep.go), so that a plan made again moves
	// only the pods it must.
	EarlierPlaces map[PodRef]string
}

// ExistingNode is a node and the pods bound to it. A pod listed without spec.nodeName is one an earlier plan
// put there that the kube-scheduler has yet to bind: it takes its room, and its hard topology spreads are
// kept within their skew as those of a pod the plan places (settle.go). The pods of an InFlightNodeClaim are
// all such pods.
type ExistingNode struct {
	Node *corev1.Node
	Pods []*corev1.Pod
}

// InFlightNodeClaim is a NodeClaim being launched and the pods expected on it. Its allocatable is
// status.allocatable once known; before that, the allocatable of the cheapest instance type of its NodePool
// that its requirements allow and that holds spec.resources.requests.
type InFlightNodeClaim struct {
	NodeClaim *v1.NodeClaim
	Pods      []*corev1.Pod
}

// Volumes are the storage objects that constrain pod zones.
type Volumes struct {
	Claims         []*corev1.PersistentVolumeClaim
	Volumes        []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
}

// PreferencePolicy says whether preferences (preferred affinities, ScheduleAnyway spreads,
// PreferNoSchedule taints) are honoured.
type PreferencePolicy string

const (
	// PreferenceRespect treats preferences as required, then relaxes them one at a time.
	PreferenceRespect PreferencePolicy = "Respect"
	// PreferenceIgnore drops every preference.
	PreferenceIgnore PreferencePolicy = "Ignore"
)

// Order names a pod ordering to pack in.
type Order string

const (
	// OrderCPU sorts by cpu, then memory, largest first (first-fit decreasing).
	OrderCPU Order = "cpu"
	// OrderMemory sorts by memory, then cpu, largest first.
	OrderMemory Order = "memory"
	// OrderConstrainedFirst places pods with topology or affinity constraints first, then by cpu.
	OrderConstrainedFirst Order = "constrained-first"
	// OrderSeedsFirst places pods that need a host of their own (hostname anti-affinity) first, so that
	// the nodes they force exist before the other pods, largest by memory first, fill them.
	OrderSeedsFirst Order = "seeds-first"
)

// Options tune Solve. The zero value is valid.
type Options struct {
	// PreferencePolicy defaults to Respect.
	PreferencePolicy PreferencePolicy
	// MinValuesPolicy defaults to Strict.
	MinValuesPolicy scheduling.MinValuesPolicy
	// MaxInstanceTypes caps the instance types per new NodeClaim. Default 60 (the AWS provider's cap).
	MaxInstanceTypes int
	// Orders to try; the cheapest resulting plan wins. Default seeds-first, then constrained-first.
	Orders []Order
}

func (o Options) withDefaults() Options {
	if o.PreferencePolicy == "" {
		o.PreferencePolicy = PreferenceRespect
	}
	if o.MinValuesPolicy == "" {
		o.MinValuesPolicy = scheduling.MinValuesStrict
	}
	if o.MaxInstanceTypes <= 0 {
		o.MaxInstanceTypes = 60
	}
	if len(o.Orders) == 0 {
		o.Orders = []Order{OrderSeedsFirst, OrderConstrainedFirst}
	}
	return o
}

// PodRef names a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r PodRef) String() string { return r.Namespace + "/" + r.Name }

// Plan is the outcome of Solve.
type Plan struct {
	// Placements of pods on existing nodes and in-flight NodeClaims.
	Placements []Placement `json:"placements"`
	// NodeClaims to launch.
	NodeClaims []NodeClaimPlan `json:"nodeClaims"`
	// Unschedulable pods, each with a reason per NodePool.
	Unschedulable []UnschedulablePod `json:"unschedulable"`
	// PricePerHour is the total of the new NodeClaims' cheapest offerings.
	PricePerHour float64 `json:"totalPricePerHour"`
	// LowerBoundPerHour is the fluid lower bound for the pods placed on new NodeClaims: for each resource
	// they request (cpu, memory, GPUs, …), their total request priced at the cheapest price per
	// allocatable unit among the instance types offering it; the largest of these. No packing can cost
	// less.
	LowerBoundPerHour float64 `json:"lowerBoundPerHour"`
	// MixLowerBoundPerHour is a tighter bound for the same pods: a lower bound on the cheapest fractional
	// mix of instance types covering all their requests together (cpu and memory exactly, as a
	// two-constraint linear program; with extended resources, through a weighting of the resources that
	// proves it by weak duality). It is at least LowerBoundPerHour, and no packing can cost less.
	MixLowerBoundPerHour float64 `json:"mixLowerBoundPerHour"`
	// Order is the pod order that produced the plan.
	Order Order `json:"order"`
}

// CostRatio is PricePerHour / LowerBoundPerHour (1 when both are zero).
func (p *Plan) CostRatio() float64 {
	if p.LowerBoundPerHour == 0 {
		return 1
	}
	return p.PricePerHour / p.LowerBoundPerHour
}

// MixCostRatio is PricePerHour / MixLowerBoundPerHour (1 when both are zero).
func (p *Plan) MixCostRatio() float64 {
	if p.MixLowerBoundPerHour == 0 {
		return 1
	}
	return p.PricePerHour / p.MixLowerBoundPerHour
}

// Placement puts a pod on an existing node or in-flight NodeClaim.
type Placement struct {
	Pod PodRef `json:"pod"`
	// Target is the node or NodeClaim name.
	Target   string `json:"target"`
	InFlight bool   `json:"inFlight,omitempty"`
	// Sequence is the pod's position in the binding order the plan was built in.
	Sequence int `json:"sequence"`
}

// NodeClaimPlan is a new NodeClaim to launch.
type NodeClaimPlan struct {
	// Name is a placeholder, <nodepool>-<n>.
	Name     string `json:"name"`
	NodePool string `json:"nodePool"`
	// Requirements are the pool's requirements narrowed by the pods' constraints.
	Requirements []v1.NodeSelectorRequirementWithMinValues `json:"requirements"`
	// InstanceTypes that fit every pod, cheapest first.
	InstanceTypes []*cloudprovider.InstanceType `json:"-"`
	// InstanceTypeNames mirrors InstanceTypes.
	InstanceTypeNames []string `json:"instanceTypes"`
	// Zone and CapacityType of the cheapest offering of the first instance type.
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	PricePerHour float64 `json:"pricePerHour"`
	// Pods in binding order, and their sequence numbers.
	Pods      []PodRef `json:"pods"`
	Sequences []int    `json:"sequences"`
	// Requests of the pods plus daemonset overhead.
	Requests          corev1.ResourceList `json:"requests"`
	DaemonSetOverhead corev1.ResourceList `json:"daemonSetOverhead,omitempty"`
	Taints            []corev1.Taint      `json:"taints,omitempty"`
	// MinValuesRelaxed is set when minValues couldn't be met and the BestEffort policy launched anyway.
	MinValuesRelaxed bool `json:"minValuesRelaxed,omitempty"`
}

// UnschedulablePod is a pod Solve could not place.
type UnschedulablePod struct {
	Pod     PodRef   `json:"pod"`
	Reasons []Reason `json:"reasons"`
}

// Reason explains why a pod can't go to a NodePool ("" for pod-level problems).
type Reason struct {
	NodePool string `json:"nodePool,omitempty"`
	Message  string `json:"message"`
}

func (r Reason) String() string {
	if r.NodePool == "" {
		return r.Message
	}
	return "nodepool " + r.NodePool + ": " + r.Message
}
