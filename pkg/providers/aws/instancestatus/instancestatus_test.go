package instancestatus_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancestatus"
)

const cluster = "demo"

// fixture is the provider reading a fake AWS that holds it to Karpenter's controller policy, through the
// real SDK client.
type fixture struct {
	aws      *fakeaws.Running
	clock    *clocktesting.FakeClock
	provider *instancestatus.Provider
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	running := fakeaws.New(fakeaws.Options{Clock: clock, EnforcePolicy: &fakeaws.KarpenterPolicy{ClusterName: cluster}}).Start()
	t.Cleanup(running.Close)
	api := ec2.NewFromConfig(running.AWSConfig())
	return &fixture{aws: running, clock: clock,
		provider: instancestatus.New(api, instance.New(instance.Deps{EC2: api, ClusterName: cluster}), clock)}
}

// run starts an instance of the cluster named.
func (f *fixture) run(clusterName string) fakeaws.Instance {
	return f.aws.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "on-demand",
		Tags: map[string]string{instance.ClusterTagKey(clusterName): "owned", instance.NodePoolTagKey: "default"}})
}

func (f *fixture) unhealthy(t *testing.T) []cloudprovider.UnhealthyInstance {
	t.Helper()
	got, err := f.provider.UnhealthyInstances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func providerID(in fakeaws.Instance) string { return "aws:///" + in.Zone + "/" + in.ID }

func TestReportsTheClustersUnhealthyInstancesOnly(t *testing.T) {
	f := newFixture(t)
	healthy, impaired, host, maintained, stranger := f.run(cluster), f.run(cluster), f.run(cluster), f.run(cluster), f.run("other")
	since := f.clock.Now().Add(-instancestatus.UnhealthyThreshold)
	f.aws.SetInstanceHealth(impaired.ID, fakeaws.InstanceHealth{InstanceStatus: fakeaws.StatusImpaired, ImpairedSince: since})
	f.aws.SetInstanceHealth(host.ID, fakeaws.InstanceHealth{SystemStatus: fakeaws.StatusImpaired, InstanceStatus: fakeaws.StatusImpaired, ImpairedSince: since})
	f.aws.SetInstanceHealth(maintained.ID, fakeaws.InstanceHealth{ScheduledEvents: []string{"system-maintenance"}})
	f.aws.SetInstanceHealth(stranger.ID, fakeaws.InstanceHealth{InstanceStatus: fakeaws.StatusImpaired, ImpairedSince: since})

	got := f.unhealthy(t)
	want := []cloudprovider.UnhealthyInstance{
		{ProviderID: providerID(impaired), Kind: cloudprovider.InterruptionInstanceStatus, Category: "InstanceStatus", Since: since},
		{ProviderID: providerID(host), Kind: cloudprovider.InterruptionInstanceStatus, Category: "InstanceStatus", Since: since},
		{ProviderID: providerID(host), Kind: cloudprovider.InterruptionSystemStatus, Category: "SystemStatus", Since: since},
		{ProviderID: providerID(maintained), Kind: cloudprovider.InterruptionEventStatus, Category: "EventStatus", Since: f.clock.Now()},
	}
	key := func(u cloudprovider.UnhealthyInstance) string { return u.ProviderID + string(u.Kind) }
	slices.SortFunc(got, func(a, b cloudprovider.UnhealthyInstance) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(want, func(a, b cloudprovider.UnhealthyInstance) int { return strings.Compare(key(a), key(b)) })
	if len(got) != len(want) {
		t.Fatalf("unhealthy = %+v, want %+v (not %s, healthy, nor %s, another cluster's)", got, want, healthy.ID, stranger.ID)
	}
	for i := range want {
		if got[i].ProviderID != want[i].ProviderID || got[i].Kind != want[i].Kind || got[i].Category != want[i].Category || !got[i].Since.Equal(want[i].Since) {
			t.Errorf("unhealthy[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if denied := f.aws.PolicyDenials(); len(denied) > 0 {
		t.Errorf("Karpenter's policy refused %v", denied)
	}
}

func TestWaitsForAStatusCheckToFailTwoMinutes(t *testing.T) {
	f := newFixture(t)
	in := f.run(cluster)
	f.aws.SetInstanceHealth(in.ID, fakeaws.InstanceHealth{SystemStatus: fakeaws.StatusImpaired, ImpairedSince: f.clock.Now()})
	if got := f.unhealthy(t); len(got) != 0 {
		t.Fatalf("unhealthy just after the check failed = %+v, want none", got)
	}
	f.clock.Step(instancestatus.UnhealthyThreshold)
	if got := f.unhealthy(t); len(got) != 1 || got[0].Category != "SystemStatus" {
		t.Fatalf("unhealthy two minutes on = %+v, want the system status", got)
	}
}

func TestCredentialsWithoutDescribeInstanceStatusAreNotPermitted(t *testing.T) {
	f := newFixture(t)
	f.aws.Faults().Fail("ec2", "DescribeInstanceStatus", "UnauthorizedOperation", "You are not authorized to perform this operation.", http.StatusForbidden, -1)
	_, err := f.provider.UnhealthyInstances(context.Background())
	if !errors.Is(err, cloudprovider.ErrNotPermitted) {
		t.Fatalf("error = %v, want one wrapping ErrNotPermitted", err)
	}
}
