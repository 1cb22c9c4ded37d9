package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// The expected values follow upstream Karpenter v1.14.1's Scheduler.computeEffectiveZoneFromPod
// (pkg/controllers/provisioning/scheduling/scheduler.go): the candidates come from the pod's strict zone
// requirement when it is an In list, else from its volumes' zones, else from the zones its zonal topology
// groups allow (Topology.GetTopologyZoneConstraints); with no source the pod is "flexible"; otherwise one
// surviving candidate is that zone, several are "flexible", none is "none".
func TestEffectiveZones(t *testing.T) {
	zoneIn := func(zones ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}}}}}
		}
	}
	withClaim := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	}
	volumeIn := func(zone string) func(*solver.Input) {
		return func(in *solver.Input) {
			in.Volumes.Claims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}}}
			in.Volumes.Volumes = []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}}}
		}
	}
	web := map[string]string{"app": "web"}
	zoneSpread := func(p *corev1.Pod) {
		p.Labels = web
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web}}}
	}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("20")}
	webPodIn := func(zones ...string) func(*solver.Input) {
		return func(in *solver.Input) {
			for _, zone := range zones {
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + zone, Labels: map[string]string{v1.LabelTopologyZone: zone, v1.LabelHostname: "node-" + zone}},
					Status: corev1.NodeStatus{Allocatable: allocatable}}
				in.Nodes = append(in.Nodes, solver.ExistingNode{Node: node, Pods: []*corev1.Pod{pod("bound-"+zone, "100m", "100Mi", withLabels(web))}})
			}
		}
	}
	cases := []struct {
		name  string
		pod   []func(*corev1.Pod)
		input []func(*solver.Input)
		want  string
	}{
		// No source lists zones: upstream returns "flexible" before looking at any candidate.
		{name: "no zone constraint", want: "flexible"},
		// nodeSelector gives the strict requirement zone In [zone-b]: the one candidate survives.
		{name: "nodeSelector one zone", pod: []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "zone-b"}
		}}, want: "zone-b"},
		// Two candidates survive, so upstream returns "flexible" at the second match.
		{name: "zone In two zones", pod: []func(*corev1.Pod){zoneIn("zone-a", "zone-b")}, want: "flexible"},
		// No strict zone requirement: the candidates are the bound volume's zones.
		{name: "volume bound to a zone", pod: []func(*corev1.Pod){withClaim}, input: []func(*solver.Input){volumeIn("zone-c")}, want: "zone-c"},
		// The selector lists zone-a; the volume admits only zone-c, so no candidate survives.
		{name: "selector and volume disjoint", pod: []func(*corev1.Pod){withClaim, zoneIn("zone-a")},
			input: []func(*solver.Input){volumeIn("zone-c")}, want: "none"},
		// One matching pod in zone-a and one in zone-b, none in zone-c: the global minimum is 0, and the pod
		// selects itself, so zone-a and zone-b would have skew 2 > maxSkew 1; only zone-c is a valid domain
		// (upstream's TopologyGroup.nextDomainTopologySpread), and it is the only candidate.
		{name: "zone spread leaves one zone", pod: []func(*corev1.Pod){zoneSpread}, input: []func(*solver.Input){webPodIn("zone-a", "zone-b")}, want: "zone-c"},
		// With one matching pod in zone-a only, zone-b and zone-c both stay within the skew.
		{name: "zone spread leaves two zones", pod: []func(*corev1.Pod){zoneSpread}, input: []func(*solver.Input){webPodIn("zone-a")}, want: "flexible"},
		// The spread's minimum is taken over the zones the pod admits (upstream's domainMinCount with the pod's
		// zone requirement): 1 over zone-a and zone-b, so both stay within the skew and the pod is flexible,
		// although zone-c holds no matching pod.
		{name: "spread minimum over the pod's zones", pod: []func(*corev1.Pod){zoneSpread, zoneIn("zone-a", "zone-b")},
			input: []func(*solver.Input){webPodIn("zone-a", "zone-b")}, want: "flexible"},
		// A required anti-affinity to the matching pods over zones leaves only zone-c (upstream counts the
		// pod's own zonal affinity groups in GetTopologyZoneConstraints too).
		{name: "zone anti-affinity leaves one zone", pod: []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: v1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: web}}}}}
		}}, input: []func(*solver.Input){webPodIn("zone-a", "zone-b")}, want: "zone-c"},
		// The volume's zone-a is the one candidate, and the spread allows only zone-c: none survives.
		{name: "selector and spread disjoint", pod: []func(*corev1.Pod){zoneSpread, withClaim},
			input: []func(*solver.Input){webPodIn("zone-a", "zone-b"), volumeIn("zone-a")}, want: "none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := input([]*corev1.Pod{pod("p", "100m", "100Mi", c.pod...)}, nodePool("default"))
			for _, m := range c.input {
				m(&in)
			}
			got := solver.EffectiveZones(in, solver.Options{})
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("effective zones %v, want [%s]", got, c.want)
			}
		})
	}
}

// A pod without zonal topology terms listed before one with them still gets its own answer, and each
// answer stays with its pod.
func TestEffectiveZonesKeepsPodOrder(t *testing.T) {
	web := map[string]string{"app": "web"}
	spread := func(p *corev1.Pod) {
		p.Labels = web
		p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "zone-a"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web}}}
	}
	plain := pod("plain", "100m", "100Mi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "zone-b"} })
	in := input([]*corev1.Pod{plain, pod("spread", "100m", "100Mi", spread), pod("free", "100m", "100Mi")}, nodePool("default"))
	got := solver.EffectiveZones(in, solver.Options{})
	want := []string{"zone-b", "zone-a", "flexible"}
	if len(got) != len(want) {
		t.Fatalf("effective zones %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("effective zones %v, want %v", got, want)
			break
		}
	}
}
