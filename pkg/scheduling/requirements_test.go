package scheduling_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

func TestRequirementsCompatible(t *testing.T) {
	zone := v1.LabelTopologyZone
	pool := scheduling.NewRequirements(
		scheduling.MustRequirement(zone, corev1.NodeSelectorOpIn, "a", "b"),
		scheduling.MustRequirement(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default"),
	)
	cases := []struct {
		name    string
		pod     scheduling.Requirements
		wantErr string
	}{
		{"same zone", scheduling.FromLabels(map[string]string{zone: "a"}), ""},
		{"other zone", scheduling.FromLabels(map[string]string{zone: "c"}), `key "topology.kubernetes.io/zone": requires In [c], allowed In [a b]`},
		{"undefined custom label", scheduling.FromLabels(map[string]string{"team": "x"}), `label "team" does not have known values`},
		{"undefined well-known label", scheduling.FromLabels(map[string]string{v1.LabelArch: "arm64"}), ""},
		{"undefined AWS instance label", scheduling.FromLabels(map[string]string{"karpenter.k8s.aws/instance-family": "c6a"}), ""},
		{"undefined AWS zone id", scheduling.NewRequirements(scheduling.MustRequirement("topology.k8s.aws/zone-id", corev1.NodeSelectorOpExists)), ""},
		{"undefined AWS instance cpu bound", scheduling.NewRequirements(scheduling.MustRequirement("karpenter.k8s.aws/instance-cpu", corev1.NodeSelectorOpGt, "4")), ""},
		{"unknown label in the AWS domain", scheduling.FromLabels(map[string]string{"karpenter.k8s.aws/instance-colour": "red"}), `label "karpenter.k8s.aws/instance-colour" does not have known values`},
		{"notin undefined", scheduling.NewRequirements(scheduling.MustRequirement("team", corev1.NodeSelectorOpNotIn, "x")), ""},
		{"opt out of karpenter", scheduling.NewRequirements(scheduling.MustRequirement(v1.NodePoolLabelKey, corev1.NodeSelectorOpDoesNotExist)), `key "karpenter.sh/nodepool"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := pool.Compatible(tc.pod, scheduling.AllowUndefinedWellKnown())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var incompatible *scheduling.IncompatibleError
			if !errors.As(err, &incompatible) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPodRequirementsOrsTerms(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"beta.kubernetes.io/os": "linux"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
			}}}},
	}}
	terms, err := scheduling.PodRequirements(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kubernetes.io/os In [linux]; topology.kubernetes.io/zone In [a]",
		"kubernetes.io/arch In [arm64]; kubernetes.io/os In [linux]",
	}
	if len(terms) != len(want) {
		t.Fatalf("got %d terms, want %d", len(terms), len(want))
	}
	for i := range want {
		if terms[i].String() != want[i] {
			t.Errorf("term %d = %q, want %q", i, terms[i].String(), want[i])
		}
	}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	rl := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQuantity(cpu), corev1.ResourceMemory: mustQuantity(mem)}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Resources: rl("1", "1Gi")}, {Resources: rl("500m", "1Gi")}},
		InitContainers: []corev1.Container{
			{Resources: rl("4", "100Mi")},
			{Resources: rl("100m", "100Mi"), RestartPolicy: &always},
			{Resources: rl("1", "3Gi")},
		},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: mustQuantity("50m")},
	}}
	got := scheduling.PodRequests(pod)
	// cpu: max(1.5 + 0.1 sidecar, 4 init) + 0.05 overhead; memory: max(2Gi+100Mi, 100Mi sidecar + 3Gi).
	if cpu := got[corev1.ResourceCPU]; cpu.MilliValue() != 4050 {
		t.Errorf("cpu = %s, want 4050m", cpu.String())
	}
	wantMem := mustQuantity("3172Mi")
	if mem := got[corev1.ResourceMemory]; mem.Cmp(wantMem) != 0 {
		t.Errorf("memory = %s, want 3172Mi", mem.String())
	}
	if pods := got[corev1.ResourcePods]; pods.Value() != 1 {
		t.Errorf("pods = %s, want 1", pods.String())
	}
}

func TestTolerates(t *testing.T) {
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	soft := corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
	if err := scheduling.Tolerates(nil, []corev1.Taint{gpu}, false); err == nil || err.Error() != "taint nvidia.com/gpu:NoSchedule not tolerated" {
		t.Errorf("untolerated gpu taint: got %v", err)
	}
	exists := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
	if err := scheduling.Tolerates(exists, []corev1.Taint{gpu, soft}, false); err != nil {
		t.Errorf("tolerated: got %v", err)
	}
	if err := scheduling.Tolerates(exists, []corev1.Taint{soft}, true); err == nil {
		t.Errorf("PreferNoSchedule counted as required: want error")
	}
	if err := scheduling.Tolerates([]corev1.Toleration{{Operator: corev1.TolerationOpExists}}, []corev1.Taint{gpu, soft}, true); err != nil {
		t.Errorf("wildcard toleration: got %v", err)
	}
}

func TestMinValues(t *testing.T) {
	family := "karpenter.k8s.aws/instance-family"
	three := 3
	r := scheduling.MustRequirement(family, corev1.NodeSelectorOpExists)
	r.MinValues = &three
	rs := scheduling.NewRequirements(r)
	types := []scheduling.Requirements{
		scheduling.FromLabels(map[string]string{family: "m5"}),
		scheduling.FromLabels(map[string]string{family: "m5"}),
		scheduling.FromLabels(map[string]string{family: "c5"}),
		scheduling.FromLabels(map[string]string{family: "r5"}),
	}
	if err := rs.CheckMinValues(types); err != nil {
		t.Errorf("all types: %v", err)
	}
	var short *scheduling.MinValuesError
	if err := rs.CheckMinValues(types[:3]); !errors.As(err, &short) || short.Got != 2 {
		t.Errorf("two families: got %v", err)
	}
	picked := scheduling.SelectWithMinValues(rs, types, 3, func(r scheduling.Requirements) scheduling.Requirements { return r })
	if err := rs.CheckMinValues(picked); err != nil || len(picked) != 3 {
		t.Errorf("selection of %d broke minValues: %v", len(picked), err)
	}
}

func TestValidateNodePoolKeys(t *testing.T) {
	err := scheduling.ValidateNodePoolKeys([]v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelHostname, Operator: corev1.NodeSelectorOpExists},
		{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
	})
	if err == nil || !strings.Contains(err.Error(), "hostname") {
		t.Errorf("got %v, want hostname restricted", err)
	}
}
