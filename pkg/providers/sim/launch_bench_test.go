package sim

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// BenchmarkChooseOfferingParallel chooses the offering of a burst's launches at once, as the lifecycle
// controller's workers do: the EC2 catalog, a NodeClaim allowing 60 instance types of the c, m and r families
// on demand, as the provisioner writes one. Its figure per operation falls with the parallelism only while
// the launches don't wait on each other.
func BenchmarkChooseOfferingParallel(b *testing.B) {
	provider, err := New(Deps{Client: fake.NewClientBuilder().Build()})
	if err != nil {
		b.Fatal(err)
	}
	nodeClaim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde"}}
	nodeClaim.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
	}
	nodeClaim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("6Gi")}
	its := provider.typesFor(nil)
	var names []string
	for _, it := range its {
		if len(names) < 60 && strings.ContainsAny(it.Name[:1], "cmr") && it.Capacity.Cpu().MilliValue() >= 4000 {
			names = append(names, it.Name)
		}
	}
	nodeClaim.Spec.Requirements = append(nodeClaim.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
		Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: names})
	reqs, err := nodeClaimRequirements(nodeClaim)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := provider.chooseOffering(ctx, nodeClaim, its, reqs, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
