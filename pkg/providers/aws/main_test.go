package aws_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// env is the API server every test shares (the node classes live there).
var env *environment.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = environment.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

const clusterName = "demo"

// harness is a fake AWS, a fake clock and a provider talking to both.
type harness struct {
	fake     *fakeaws.Running
	clock    *clocktesting.FakeClock
	provider *aws.CloudProvider
}

func newHarness(t testing.TB, mutate ...func(*aws.Deps)) *harness {
	t.Helper()
	return newHarnessUnderPolicy(t, clusterName, mutate...)
}

// newHarnessUnderPolicy is a harness whose fake holds the provider to Karpenter's controller policy for the
// cluster: Lathe must run under a role kept from Karpenter.
func newHarnessUnderPolicy(t testing.TB, policyCluster string, mutate ...func(*aws.Deps)) *harness {
	t.Helper()
	h := &harness{fake: fakeaws.New(fakeaws.Options{EnforcePolicy: &fakeaws.KarpenterPolicy{ClusterName: policyCluster}}).Start(), clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	t.Cleanup(h.fake.Close)
	h.provider = h.newProvider(t, mutate...)
	return h
}

// newProvider is a fresh provider (as after a restart) on the same fake and clock.
func (h *harness) newProvider(t testing.TB, mutate ...func(*aws.Deps)) *aws.CloudProvider {
	t.Helper()
	deps := aws.Deps{Client: env.Client, EC2: ec2.NewFromConfig(h.fake.AWSConfig()), Clock: h.clock, ClusterName: clusterName,
		ClusterEndpoint: "https://127.0.0.1:6443", UserData: renderLines}
	for _, m := range mutate {
		m(&deps)
	}
	p, err := aws.New(deps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// renderLines is a stand-in user data renderer: "cluster=<name>" and "label=<k>=<v>" lines.
func renderLines(in aws.UserDataInput) (string, error) {
	lines := []string{"cluster=" + in.ClusterName}
	for _, k := range slices.Sorted(maps.Keys(in.Labels)) {
		lines = append(lines, "label="+k+"="+in.Labels[k])
	}
	return strings.Join(lines, "\n"), nil
}

// nodeClass creates a Ready EC2NodeClass with subnets in us-east-1a and b, one security group and an
// amd64 AMI, changed by mutate before its status is written.
func nodeClass(t testing.TB, name string, mutate ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{awsv1.AnnotationEC2NodeClassHash: "111", awsv1.AnnotationEC2NodeClassHashVersion: "v4"}},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-demo",
			Tags:                       map[string]string{"team": "a"},
		},
	}
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), nc) })
	nc.Status = awsv1.EC2NodeClassStatus{
		Subnets:        []awsv1.Subnet{{ID: "subnet-a", Zone: "us-east-1a", ZoneID: "use1-az1"}, {ID: "subnet-b", Zone: "us-east-1b", ZoneID: "use1-az2"}},
		SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-1"}},
		AMIs: []awsv1.AMI{{ID: "ami-amd64", Requirements: []corev1.NodeSelectorRequirement{
			{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}},
		InstanceProfile: "profile-demo",
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	for _, m := range mutate {
		m(nc)
	}
	for i := range nc.Status.Conditions {
		nc.Status.Conditions[i].LastTransitionTime = metav1.Now()
	}
	if err := env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

var claimCount int

// nodeClaim is a NodeClaim of pool "default" for the node class, allowing the instance types on the
// capacity type.
func nodeClaim(nodeClassName, capacityType string, instanceTypes ...string) *v1.NodeClaim {
	claimCount++
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("default-%05d", claimCount), UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", claimCount)),
			Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClassName},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: instanceTypes},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}},
			},
		},
	}
}

// live are the fake's instances that aren't terminated.
func (h *harness) live() []fakeaws.Instance {
	return slices.DeleteFunc(h.fake.Instances(), func(in fakeaws.Instance) bool { return in.State == fakeaws.StateTerminated })
}
