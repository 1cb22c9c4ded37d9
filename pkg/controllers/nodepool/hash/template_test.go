package hash_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/hash"
)

func TestTemplateHash(t *testing.T) {
	base := nodePool("pool")
	baseHash := mustHash(t, base)
	if again := mustHash(t, base.DeepCopy()); again != baseHash {
		t.Fatalf("hash not stable: %s then %s", baseHash, again)
	}
	cases := []struct {
		name    string
		mutate  func(*v1.NodePool)
		changes bool
	}{
		{name: "requirements", changes: false, mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"arm64"}
		}},
		{name: "limits and disruption", changes: false, mutate: func(np *v1.NodePool) {
			np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("10")}
			np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
		}},
		{name: "same expireAfter spelt differently", changes: false, mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("43200m")
		}},
		{name: "more labels in another order", changes: true, mutate: func(np *v1.NodePool) {
			np.Spec.Template.Labels = map[string]string{"z": "1", "team": "a"}
		}},
		{name: "taints", changes: true, mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "expireAfter", changes: true, mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("Never")
		}},
		{name: "terminationGracePeriod", changes: true, mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}},
		{name: "nodeClassRef", changes: true, mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.NodeClassRef.Name = "other"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			np := base.DeepCopy()
			tc.mutate(np)
			if changed := mustHash(t, np) != baseHash; changed != tc.changes {
				t.Fatalf("hash changed = %v, want %v", changed, tc.changes)
			}
		})
	}
}

func mustHash(t *testing.T, np *v1.NodePool) string {
	t.Helper()
	h, err := hash.Template(np)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
