package hash_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

// env is the API server the controller specs run against; it is started once because starting it costs seconds.
var env *environment.Environment

func TestHash(t *testing.T) { suite.Run(t, "NodePool hash") }

var _ = suite.WithEnvironment(&env)

// nodePool returns a valid NodePool.
func nodePool(name string) *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{
				ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "a"}},
				Spec: v1.NodeClaimTemplateSpec{
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
					},
					NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
					ExpireAfter:  v1.MustParseNillableDuration("720h"),
				},
			},
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("0s")},
		},
	}
}
