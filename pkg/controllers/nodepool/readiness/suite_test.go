package readiness_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

// env is the API server the specs run against; it is started once because starting it costs seconds.
var env *environment.Environment

func TestReadiness(t *testing.T) { suite.Run(t, "NodePool readiness") }

var _ = suite.WithEnvironment(&env)

const ec2NodeClassSpec = `
spec:
  role: KarpenterNodeRole-test
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
`

// createNodeClass creates an EC2NodeClass and, unless ready is Unknown, sets its Ready condition.
func createNodeClass(ctx context.Context, name string, ready metav1.ConditionStatus) *awsv1.EC2NodeClass {
	class := &awsv1.EC2NodeClass{}
	Expect(yaml.Unmarshal([]byte(ec2NodeClassSpec), class)).To(Succeed())
	class.Name = name
	Expect(env.Client.Create(ctx, class)).To(Succeed())
	if ready != metav1.ConditionUnknown {
		setNodeClassReady(ctx, class, ready)
	}
	return class
}

func setNodeClassReady(ctx context.Context, class *awsv1.EC2NodeClass, ready metav1.ConditionStatus) {
	meta.SetStatusCondition(&class.Status.Conditions, metav1.Condition{
		Type: awsv1.ConditionTypeReady, Status: ready, Reason: "Test", Message: "subnets not found",
	})
	Expect(env.Client.Status().Update(ctx, class)).To(Succeed())
}

// nodePool returns a valid NodePool referring to the EC2NodeClass with the name.
func nodePool(name, nodeClass string) *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass},
			}},
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("0s")},
		},
	}
}

func getNodePool(ctx context.Context, name string) *v1.NodePool {
	GinkgoHelper()
	np := &v1.NodePool{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, np)).To(Succeed())
	return np
}

func condition(np *v1.NodePool, condType string) *metav1.Condition {
	GinkgoHelper()
	c := meta.FindStatusCondition(np.Status.Conditions, condType)
	Expect(c).NotTo(BeNil(), "condition "+condType)
	return c
}

func cleanUp(ctx context.Context) {
	Expect(env.Client.DeleteAllOf(ctx, &v1.NodePool{})).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, &awsv1.EC2NodeClass{})).To(Succeed())
}
