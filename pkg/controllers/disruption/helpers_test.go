package disruption_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

var now = time.Date(2026, 6, 15, 9, 30, 0, 0, time.UTC)

const zone = "zone-a"

// catalog has types c-<n> with n cpu and 2n GiB, 0.05 per cpu on-demand and 0.02 per cpu spot.
func catalog(cpus ...int64) cloudprovider.InstanceTypes {
	if len(cpus) == 0 {
		cpus = []int64{2, 4, 8, 16}
	}
	var out cloudprovider.InstanceTypes
	for _, cpu := range cpus {
		name := fmt.Sprintf("c-%d", cpu)
		reqs := scheduling.FromLabels(map[string]string{v1.LabelInstanceType: name, v1.LabelArch: "amd64", v1.LabelOS: "linux"})
		reqs.Add(scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone))
		reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand, v1.CapacityTypeSpot))
		out = append(out, &cloudprovider.InstanceType{
			Name: name, Requirements: reqs,
			Offerings: cloudprovider.Offerings{
				{Zone: zone, CapacityType: v1.CapacityTypeOnDemand, Price: 0.05 * float64(cpu), Available: true},
				{Zone: zone, CapacityType: v1.CapacityTypeSpot, Price: 0.02 * float64(cpu), Available: true},
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(2*cpu<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
			},
		})
	}
	return out
}

func pool(mutate ...func(*v1.NodePool)) *v1.NodePool {
	p := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			}},
			Disruption: v1.Disruption{
				ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
				ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func budget(nodes string, schedule string, d time.Duration) func(*v1.NodePool) {
	return func(p *v1.NodePool) {
		b := v1.Budget{Nodes: nodes}
		if schedule != "" {
			b.Schedule, b.Duration = &schedule, &metav1.Duration{Duration: d}
		}
		p.Spec.Disruption.Budgets = append(p.Spec.Disruption.Budgets, b)
	}
}

// node is a managed, initialized, consolidatable node of the default pool.
func node(name string, cpu int64, capacityType string, pods ...*corev1.Pod) *state.StateNode {
	it := fmt.Sprintf("c-%d", cpu)
	labels := map[string]string{
		v1.NodePoolLabelKey: "default", v1.LabelInstanceType: it, v1.LabelTopologyZone: zone,
		v1.CapacityTypeLabelKey: capacityType, v1.LabelArch: "amd64", v1.LabelOS: "linux", v1.LabelHostname: name,
	}
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(2*cpu<<30, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, UID: types.UID(name)},
		Spec:       corev1.NodeSpec{ProviderID: "fake:///" + name},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-claim", Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: v1.NodeClaimStatus{NodeName: name, ProviderID: n.Spec.ProviderID, Conditions: []metav1.Condition{
			{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			{Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue},
		}},
	}
	requested := corev1.ResourceList{}
	for _, p := range pods {
		p.Spec.NodeName = name
		scheduling.AddResources(requested, scheduling.PodRequests(p))
	}
	return &state.StateNode{
		ProviderID: n.Spec.ProviderID, Node: n, NodeClaim: claim, NodePool: "default",
		Labels: labels, Allocatable: alloc, Capacity: alloc, Pods: pods, Requested: requested,
	}
}

// pod is a running ReplicaSet pod requesting the cpu.
func pod(name, cpu string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("100Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: now.Add(-2 * time.Hour)}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func daemonPod(name string) *corev1.Pod {
	return pod(name, "100m", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: ptr.To(true)}}
	})
}

func annotated(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{key: value} }
}

// view is a View over the nodes with one pool and the catalog.
func view(p *v1.NodePool, its cloudprovider.InstanceTypes, nodes ...*state.StateNode) *disruption.View {
	return &disruption.View{
		Snapshot:        &state.Snapshot{Nodes: nodes},
		NodePools:       map[string]*v1.NodePool{p.Name: p},
		InstanceTypes:   map[string]cloudprovider.InstanceTypes{p.Name: its},
		LaunchablePools: []*v1.NodePool{p},
		Now:             now,
	}
}

func names(cands []*disruption.Candidate) []string {
	var out []string
	for _, c := range cands {
		out = append(out, c.Node.Name)
	}
	return out
}

type disruptionNode = state.StateNode

func condition(typ string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ}
}
