// Package workload generates the pod workloads of Karpenter's scheduling benchmark, reproduced exactly (same
// seeded draws in the same order), and a seeded GPU cluster's mix (GPU), for Lathe's tests and benchmarks.
package workload

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Seed is the seed of the single math/rand source one workload draws from.
const Seed = 42

// generator draws from one seeded source in a fixed order.
type generator struct {
	rng *rand.Rand
	n   int
}

func newGenerator() *generator { return &generator{rng: rand.New(rand.NewSource(Seed))} }

// label, cpu and mem draw from the values Karpenter's benchmark uses, in its order.
func (g *generator) label() string {
	values := [...]string{"a", "b", "c", "d", "e", "f", "g"}
	return values[g.rng.Intn(len(values))]
}

func (g *generator) cpu() string {
	values := [...]string{"100m", "250m", "500m", "1000m", "1500m"}
	return values[g.rng.Intn(len(values))]
}

func (g *generator) mem() string {
	values := [...]string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	return values[g.rng.Intn(len(values))]
}

func (g *generator) pod(prefix string, labels map[string]string, cpu, mem string) *corev1.Pod {
	g.n++
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, g.n), Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			}},
		}}},
	}
}

func (g *generator) generic() *corev1.Pod {
	v := g.label()
	cpu, mem := g.cpu(), g.mem()
	return g.pod("generic", map[string]string{"my-label": v}, cpu, mem)
}

func (g *generator) spread(key string) *corev1.Pod {
	own, selected := g.label(), g.label()
	cpu, mem := g.cpu(), g.mem()
	pod := g.pod("spread", map[string]string{"my-label": own}, cpu, mem)
	pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": selected}},
	}}
	return pod
}

// Diverse returns Karpenter's diverse(n) workload: with k = n/5, k generic pods, k pods spread over zones,
// k spread over hostnames, k with zone self-affinity, k with hostname anti-affinity, then n-5k generic pods.
func Diverse(n int) []*corev1.Pod {
	g := newGenerator()
	k := n / 5
	pods := make([]*corev1.Pod, 0, n)
	for range k {
		pods = append(pods, g.generic())
	}
	for range k {
		pods = append(pods, g.spread(v1.LabelTopologyZone))
	}
	for range k {
		pods = append(pods, g.spread(v1.LabelHostname))
	}
	for range k {
		v := g.label()
		cpu, mem := g.cpu(), g.mem()
		labels := map[string]string{"my-affininity": v} // sic, as in Karpenter's benchmark
		pod := g.pod("affinity", labels, cpu, mem)
		pod.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: v1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-affininity": v}},
		}}}}
		pods = append(pods, pod)
	}
	for range k {
		cpu, mem := g.cpu(), g.mem()
		pod := g.pod("anti", map[string]string{"app": "nginx"}, cpu, mem)
		pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
		}}}}
		pods = append(pods, pod)
	}
	for range n - 5*k {
		pods = append(pods, g.generic())
	}
	return pods
}

// Preference returns Karpenter's preference(n) workload: n identical pods (cpu and memory drawn once)
// labelled app=nginx that prefer zone test-zone-1 (weight 1) and prefer not to share a zone (weight 10) or a
// host (weight 1) with another app=nginx pod.
func Preference(n int) []*corev1.Pod {
	g := newGenerator()
	cpu, mem := g.cpu(), g.mem()
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}
	pods := make([]*corev1.Pod, 0, n)
	for range n {
		pod := g.pod("preference", map[string]string{"app": "nginx"}, cpu, mem)
		pod.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"},
				}}},
			}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: v1.LabelTopologyZone, LabelSelector: selector}},
				{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: selector}},
			}},
		}
		pods = append(pods, pod)
	}
	return pods
}

// NodePool is the benchmark's single NodePool: no requirements and no limits.
func NodePool() *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
}

// Alike returns n identical pods of one Deployment without constraints, each requesting cpu and no memory,
// like the getting-started inflate Deployment scaled up.
func Alike(n int, cpu string) []*corev1.Pod {
	g := newGenerator()
	pods := make([]*corev1.Pod, 0, n)
	for range n {
		pod := g.pod("alike", map[string]string{"app": "inflate"}, cpu, "0")
		delete(pod.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory)
		pods = append(pods, pod)
	}
	return pods
}
