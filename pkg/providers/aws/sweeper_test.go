package aws_test

import (
	"context"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
)

// TestTheSweeperDeletesTemplatesKarpenterLeftOnceUnused: a launch template Karpenter left for the cluster
// (tagged as v1.14 tags its own) is found when the sweeper starts and deleted at the first sweep after it
// went unused for a minute, under Karpenter's controller policy.
func TestTheSweeperDeletesTemplatesKarpenterLeftOnceUnused(t *testing.T) {
	h := newHarness(t)
	_, err := ec2.NewFromConfig(h.fake.AWSConfig()).CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: awssdk.String("karpenter.k8s.aws/1234"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: awssdk.String("ami-1")},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{
			{Key: awssdk.String("kubernetes.io/cluster/" + clusterName), Value: awssdk.String("owned")},
			{Key: awssdk.String("eks:eks-cluster-name"), Value: awssdk.String(clusterName)},
			{Key: awssdk.String("karpenter.sh/nodepool"), Value: awssdk.String("default")},
			{Key: awssdk.String("karpenter.k8s.aws/ec2nodeclass"), Value: awssdk.String("default")},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- aws.NewTemplateSweeper(h.provider, h.clock).Start(ctx) }()
	defer func() { cancel(); <-stopped }()
	waitFor(t, "the sweeper to start ticking", h.clock.HasWaiters)
	h.clock.Step(aws.SweepInterval)
	waitFor(t, "the template Karpenter left to be deleted", func() bool {
		_, ok := h.fake.LaunchTemplate("karpenter.k8s.aws/1234")
		return !ok
	})
	if denied := h.fake.PolicyDenials(); len(denied) != 0 {
		t.Fatalf("the policy refused %v", denied)
	}
}

// waitFor polls cond until it holds (the sweeper runs in its own goroutine), failing after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
