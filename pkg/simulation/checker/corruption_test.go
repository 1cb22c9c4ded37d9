package checker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/checker"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

func smallPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withPool(pods []*corev1.Pod, mutate ...func(*v1.NodePool)) solver.Input {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	for _, m := range mutate {
		m(np)
	}
	return solver.Input{Pods: pods, NodePools: []*v1.NodePool{np},
		InstanceTypes: map[string]cloudprovider.InstanceTypes{"default": catalog.KarpenterBenchmark()[:16]}}
}

// withEC2Pool is withPool on the EC2 c family, whose types carry numeric labels (instance-cpu, …).
func withEC2Pool(pods []*corev1.Pod) solver.Input {
	its, err := catalog.EC2(catalog.EC2Options{Categories: []string{"c"}})
	if err != nil {
		panic(err)
	}
	in := withPool(pods)
	in.InstanceTypes["default"] = its
	return in
}

// mergeClaims moves every pod onto the first claim, keeping sequences.
func mergeClaims(p *solver.Plan) {
	first := &p.NodeClaims[0]
	for i := 1; i < len(p.NodeClaims); i++ {
		first.Pods = append(first.Pods, p.NodeClaims[i].Pods...)
		first.Sequences = append(first.Sequences, p.NodeClaims[i].Sequences...)
		p.NodeClaims[i].Pods, p.NodeClaims[i].Sequences = nil, nil
	}
}

func TestDetectsConstraintViolations(t *testing.T) {
	spread := func(key string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		}
	}
	var spreadPods, portPods []*corev1.Pod
	for i := range 4 {
		spreadPods = append(spreadPods, smallPod(fmt.Sprintf("s-%d", i), spread(v1.LabelHostname)))
		portPods = append(portPods, smallPod(fmt.Sprintf("p-%d", i), func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 80}} }))
	}
	cases := []struct {
		name    string
		in      solver.Input
		corrupt func(*solver.Plan, *solver.Input)
		want    string
	}{
		{"hostname spread", withPool(spreadPods), func(p *solver.Plan, _ *solver.Input) { mergeClaims(p) }, "topology spread"},
		{"host ports", withPool(portPods), func(p *solver.Plan, _ *solver.Input) { mergeClaims(p) }, "host port"},
		{"taint", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.NodePools[0].Spec.Template.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}, "not tolerated"},
		{"limit", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.NodePools[0].Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("100m")}
		}, "exceeds limit"},
		{"price order", withPool([]*corev1.Pod{smallPod("a")}), func(p *solver.Plan, _ *solver.Input) {
			its := p.NodeClaims[0].InstanceTypes
			its[0], its[1] = its[1], its[0]
		}, "cheapest first"},
		{"node selector", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.Pods[0].Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "elsewhere"}
		}, "satisfy none"},
		{"node affinity terms", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			term := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
				return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: op, Values: values}}}
			}
			in.Pods[0].Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{term(corev1.NodeSelectorOpIn, "s390x"), term(corev1.NodeSelectorOpDoesNotExist)},
			}}}
		}, "satisfy none"},
		{"numeric requirement", withEC2Pool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.Pods[0].Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"1000"}}}}},
			}}}
		}, "satisfy none"},
		{"toleration value", withPool([]*corev1.Pod{smallPod("a", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}}
		})}, func(pool *v1.NodePool) {
			pool.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
		}), func(_ *solver.Plan, in *solver.Input) {
			in.NodePools[0].Spec.Template.Spec.Taints[0].Value = "b"
		}, "not tolerated"},
		{"init container requests", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.Pods[0].Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1000")}}}}
		}, "don't fit"},
		{"sidecar requests", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			always := corev1.ContainerRestartPolicyAlways
			in.Pods[0].Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("1Ti")}}}}
		}, "don't fit"},
		{"pod overhead", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.Pods[0].Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
		}, "don't fit"},
		{"daemonset overhead", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.DaemonSets = []*appsv1.DaemonSet{daemonSet("1000", nil, nil)}
		}, "don't fit"},
		{"daemonset on the pool's label", withPool([]*corev1.Pod{smallPod("a")}, func(pool *v1.NodePool) {
			pool.Spec.Template.Labels = map[string]string{"team": "a"}
		}), func(_ *solver.Plan, in *solver.Input) {
			in.DaemonSets = []*appsv1.DaemonSet{daemonSet("1000", map[string]string{"team": "a"}, nil)}
		}, "don't fit"},
		{"requirement outside the pool", withPool([]*corev1.Pod{smallPod("a")}), func(_ *solver.Plan, in *solver.Input) {
			in.NodePools[0].Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"}}}
		}, "allows what the nodepool doesn't"},
		{"instance type outside the claim", withPool([]*corev1.Pod{smallPod("a")}), func(p *solver.Plan, _ *solver.Input) {
			for i, r := range p.NodeClaims[0].Requirements {
				if r.Key == v1.LabelInstanceType {
					p.NodeClaims[0].Requirements[i].Values = []string{"none-of-them"}
				}
			}
		}, "incompatible"},
		{"min values", withPool([]*corev1.Pod{smallPod("a")}), func(p *solver.Plan, _ *solver.Input) {
			for i, r := range p.NodeClaims[0].Requirements {
				if r.Key == v1.LabelInstanceType {
					n := len(r.Values) + 1
					p.NodeClaims[0].Requirements[i].MinValues = &n
				}
			}
		}, "minValues"},
		{"unknown pod", withPool([]*corev1.Pod{smallPod("a")}), func(p *solver.Plan, _ *solver.Input) {
			p.Unschedulable = append(p.Unschedulable, solver.UnschedulablePod{Pod: solver.PodRef{Namespace: "x", Name: "y"}, Reasons: []solver.Reason{{Message: "m"}}})
		}, "unknown pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := solver.Solve(context.Background(), tc.in, solver.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := checker.Check(tc.in, plan, checker.Options{}); err != nil {
				t.Fatalf("valid plan rejected: %v", err)
			}
			in := tc.in
			in.NodePools = []*v1.NodePool{tc.in.NodePools[0].DeepCopy()}
			in.Pods = append([]*corev1.Pod{}, tc.in.Pods...)
			in.Pods[0] = tc.in.Pods[0].DeepCopy()
			tc.corrupt(plan, &in)
			err = checker.Check(in, plan, checker.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// daemonSet requests cpu on every node whose labels include selector and whose taints it tolerates.
func daemonSet(cpu string, selector map[string]string, tolerations []corev1.Toleration) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{NodeSelector: selector, Tolerations: tolerations, Containers: []corev1.Container{{Name: "d",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}}}
}

// TestDaemonSetsThatCannotRunAreNotCounted: a daemonset selecting a label the pool's nodes don't have, or
// not tolerating the pool's taint, adds nothing to a claim.
func TestDaemonSetsThatCannotRunAreNotCounted(t *testing.T) {
	in := withPool([]*corev1.Pod{smallPod("a", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	})}, func(pool *v1.NodePool) {
		pool.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	})
	plan, err := solver.Solve(context.Background(), in, solver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tolerateAll := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	in.DaemonSets = []*appsv1.DaemonSet{
		daemonSet("1000", map[string]string{"team": "elsewhere"}, tolerateAll), // label the pool's nodes lack
		daemonSet("1000", nil, nil), // doesn't tolerate the taint
	}
	if err := checker.Check(in, plan, checker.Options{}); err != nil {
		t.Fatalf("daemonsets that can't run were counted: %v", err)
	}
}
