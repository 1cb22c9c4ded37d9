package instance_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
)

// metricsFixture is a provider on the fake EC2 (with launch template "lt") whose metrics go to reg.
type metricsFixture struct {
	fake *fakeaws.Running
	reg  *prometheus.Registry
	p    *instance.Provider
}

func newMetricsFixture(t *testing.T, batchIdle time.Duration) metricsFixture {
	t.Helper()
	fake := fakeaws.New(fakeaws.Options{}).Start()
	t.Cleanup(fake.Close)
	api := ec2.NewFromConfig(fake.AWSConfig())
	_, err := api.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p := instance.New(instance.Deps{EC2: api, ClusterName: "demo", Unavailable: unavailable.New(clocktesting.NewFakeClock(time.Now())),
		BatchIdle: batchIdle, Metrics: instance.NewMetrics(reg)})
	return metricsFixture{fake: fake, reg: reg, p: p}
}

// series returns the family's series whose labels include want (nil when there is none).
func series(t *testing.T, reg *prometheus.Registry, family string, want map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func TestBatchesAreMeasured(t *testing.T) {
	f := newMetricsFixture(t, 50*time.Millisecond)
	overrides := []instance.Override{{LaunchTemplate: "lt", InstanceType: "m5.large", Zone: "us-east-1a", SubnetID: "subnet-a", Price: 0.096}}
	const launches = 5
	var wg sync.WaitGroup
	for i := range launches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.p.Create(context.Background(), instance.Request{NodeClaimName: fmt.Sprintf("claim-%d", i), NodeClaimUID: fmt.Sprintf("uid-%d", i),
				CapacityType: "on-demand", Overrides: overrides, Tags: map[string]string{instance.ClusterTagKey("demo"): "owned"}})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	fleets := uint64(f.fake.Faults().Calls("ec2", "CreateFleet"))
	size := series(t, f.reg, "karpenter_cloudprovider_batcher_batch_size", map[string]string{"batcher": "create_fleet"})
	if size == nil || size.GetHistogram().GetSampleCount() != fleets || size.GetHistogram().GetSampleSum() != launches {
		t.Fatalf("batch_size = %v, want %d batches of %d launches in all", size, fleets, launches)
	}
	window := series(t, f.reg, "karpenter_cloudprovider_batcher_batch_time_seconds", map[string]string{"batcher": "create_fleet"})
	if window == nil || window.GetHistogram().GetSampleCount() != fleets || window.GetHistogram().GetSampleSum() < float64(fleets)*0.05 {
		t.Fatalf("batch_time_seconds = %v, want %d windows of at least the idle time", window, fleets)
	}
}

func TestLaunchFailuresAreCountedPerOffering(t *testing.T) {
	f := newMetricsFixture(t, -1)
	zoneID := f.fake.ZoneID("us-east-1a")
	f.fake.SetInsufficientCapacity("m5.large", "us-east-1a", "spot", true)
	f.fake.SetInsufficientCapacity("m5.xlarge", "us-east-1a", "spot", true)
	overrides := []instance.Override{
		{LaunchTemplate: "lt", InstanceType: "m5.large", Zone: "us-east-1a", ZoneID: zoneID, SubnetID: "subnet-a", Price: 0.03},
		{LaunchTemplate: "lt", InstanceType: "m5.xlarge", Zone: "us-east-1a", ZoneID: zoneID, SubnetID: "subnet-a", Price: 0.06},
	}
	_, err := f.p.Create(context.Background(), instance.Request{NodeClaimName: "claim", NodeClaimUID: "uid", CapacityType: "spot", Overrides: overrides})
	if err == nil {
		t.Fatal("launched without capacity")
	}
	failures := series(t, f.reg, "karpenter_cloudprovider_instance_launch_failures_total",
		map[string]string{"zone": "us-east-1a", "zone_id": zoneID, "capacity_type": "spot", "reason": "LaunchFailed"})
	if failures.GetCounter().GetValue() < 2 {
		t.Fatalf("launch failures = %v, want one per offering without capacity (2 or more)", failures)
	}
}

func TestTerminationFailuresAreCounted(t *testing.T) {
	f := newMetricsFixture(t, -1)
	in := f.fake.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: "us-east-1b", Tags: map[string]string{instance.ClusterTagKey("demo"): "owned"}})
	f.fake.Faults().Fail("ec2", "TerminateInstances", "UnauthorizedOperation", "not allowed", http.StatusForbidden, 1)
	if err := f.p.Delete(context.Background(), in.ID); err == nil {
		t.Fatal("Delete succeeded although TerminateInstances failed")
	}
	labels := map[string]string{"zone": "us-east-1b", "zone_id": f.fake.ZoneID("us-east-1b")}
	if labels["zone_id"] == "" {
		t.Fatal("the fake has no zone ID for us-east-1b")
	}
	if failures := series(t, f.reg, "karpenter_cloudprovider_instance_termination_failures_total", labels); failures.GetCounter().GetValue() != 1 {
		t.Fatalf("termination failures %v = %v, want 1", labels, failures)
	}
	if err := f.p.Delete(context.Background(), in.ID); err != nil {
		t.Fatal(err)
	}
	if failures := series(t, f.reg, "karpenter_cloudprovider_instance_termination_failures_total", labels); failures.GetCounter().GetValue() != 1 {
		t.Fatalf("a successful termination was counted as failed: %v", failures)
	}
}
