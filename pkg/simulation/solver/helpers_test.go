package solver_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/checker"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// testZones are the zones of the small test catalog.
func testZones() []string { return []string{"zone-a", "zone-b", "zone-c"} }

// smallCatalog has types "c-<n>" with n cpu and 2n GiB for n in 2, 4, ..., 64, priced 0.05 per cpu on-demand
// and 0.02 per cpu spot in every zone, plus an arm64 type.
func smallCatalog() cloudprovider.InstanceTypes {
	var out cloudprovider.InstanceTypes
	for _, cpu := range []int64{2, 4, 8, 16, 32, 64} {
		out = append(out, instanceType(fmt.Sprintf("c-%d", cpu), "amd64", cpu, 0.05*float64(cpu)))
	}
	return append(out, instanceType("arm-4", "arm64", 4, 0.3))
}

func instanceType(name, arch string, cpu int64, price float64) *cloudprovider.InstanceType {
	var offerings cloudprovider.Offerings
	for _, z := range testZones() {
		offerings = append(offerings,
			cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price * 0.4, Available: true})
	}
	reqs := scheduling.FromLabels(map[string]string{v1.LabelInstanceType: name, v1.LabelArch: arch, v1.LabelOS: "linux",
		"karpenter.k8s.aws/instance-family": name})
	reqs.Add(scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, testZones()...))
	reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand, v1.CapacityTypeSpot))
	return &cloudprovider.InstanceType{
		Name: name, Requirements: reqs, Offerings: offerings,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(2*cpu<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
		Overhead: cloudprovider.InstanceTypeOverhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
	}
}

func nodePool(name string, mutate ...func(*v1.NodePool)) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, m := range mutate {
		m(np)
	}
	return np
}

func pod(name, cpu, mem string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func pods(n int, prefix, cpu, mem string, mutate ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, pod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem, mutate...))
	}
	return out
}

func withLabels(labels map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels = labels }
}

func daemonSet(cpu string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "d", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}}}
}

func input(ps []*corev1.Pod, pools ...*v1.NodePool) solver.Input {
	in := solver.Input{Pods: ps, NodePools: pools, InstanceTypes: map[string]cloudprovider.InstanceTypes{}}
	for _, p := range pools {
		in.InstanceTypes[p.Name] = smallCatalog()
	}
	return in
}

// solveChecked solves and validates the plan with the independent checker.
func solveChecked(t *testing.T, in solver.Input, opts solver.Options) *solver.Plan {
	t.Helper()
	plan, err := solver.Solve(context.Background(), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := checker.Check(in, plan, checker.Options{MaxInstanceTypes: opts.MaxInstanceTypes}); err != nil {
		t.Fatalf("checker rejected the plan:\n%v", err)
	}
	return plan
}

func reasonsOf(plan *solver.Plan) []string {
	var out []string
	for _, u := range plan.Unschedulable {
		for _, r := range u.Reasons {
			out = append(out, r.String())
		}
	}
	return out
}
