package provisioning_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

func TestNewNodeClaim(t *testing.T) {
	pool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
			ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			Spec: v1.NodeClaimTemplateSpec{
				Taints:       []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				ExpireAfter:  v1.MustParseNillableDuration("720h"),
			},
		}},
	}
	plan := solver.NodeClaimPlan{
		NodePool: "default",
		Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
			{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "c5.large"}},
			{Key: v1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n1"}},
		},
		Requests:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
		MinValuesRelaxed: true,
	}
	nc, err := provisioning.NewNodeClaim(pool, plan)
	if err != nil {
		t.Fatal(err)
	}
	if nc.GenerateName != "default-" {
		t.Errorf("generateName = %q", nc.GenerateName)
	}
	wantLabels := map[string]string{"team": "a", v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: "spot"}
	for k, v := range wantLabels {
		if nc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, nc.Labels[k], v)
		}
	}
	if _, ok := nc.Labels[v1.LabelInstanceType]; ok {
		t.Error("multi-valued requirement became a label")
	}
	if nc.Annotations["note"] != "x" || nc.Annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey] != "true" ||
		nc.Annotations[v1.NodePoolHashAnnotationKey] == "" || nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != "v3" {
		t.Errorf("annotations = %v", nc.Annotations)
	}
	if !slices.Equal(nc.Finalizers, []string{v1.TerminationFinalizer}) {
		t.Errorf("finalizers = %v, want the termination finalizer from creation on", nc.Finalizers)
	}
	if len(nc.Spec.Requirements) != 2 {
		t.Errorf("requirements = %v, want hostname dropped", nc.Spec.Requirements)
	}
	if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].UID != "uid-1" || nc.OwnerReferences[0].Kind != "NodePool" {
		t.Errorf("owner = %v", nc.OwnerReferences)
	}
	if nc.Spec.Resources.Requests.Cpu().MilliValue() != 1500 || nc.Spec.NodeClassRef.Name != "default" || len(nc.Spec.Taints) != 1 {
		t.Errorf("spec = %+v", nc.Spec)
	}
	// Expiration reads the claim's own expireAfter, so the template's must be copied.
	if nc.Spec.ExpireAfter.String() != (720 * time.Hour).String() {
		t.Errorf("expireAfter = %s, want the template's 720h", nc.Spec.ExpireAfter)
	}
	if pool.Spec.Template.Labels[v1.NodePoolLabelKey] != "" {
		t.Error("the pool's template labels were modified")
	}
}
