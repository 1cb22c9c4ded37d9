package aws_test

import (
	"context"

	"errors"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"sync"
	"testing"
	"time"
)

// BenchmarkLaunch100 launches 100 NodeClaims at once against the fake with 50 ms of latency on every EC2
// call, and reports the CreateFleet calls it took.
func BenchmarkLaunch100(b *testing.B) {
	h := newHarness(b)
	nc := nodeClass(b, "bench")
	// Node classes are read from the manager's cache in Lathe; the shared test client would throttle.
	h.provider = h.newProvider(b, func(d *aws.Deps) { d.Client = cachedNodeClass{nc} })
	h.fake.Faults().Latency("ec2", "*", benchLatency)
	ctx := logr.NewContext(context.Background(), logr.Discard())
	// Warm up as a running Lathe is: the node class's instance types shaped, its launch template created.
	if _, err := h.provider.Create(ctx, nodeClaim(nc.Name, "on-demand", "m5.large", "m5.xlarge", "c5.large")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		before := h.fake.Faults().Calls("ec2", "CreateFleet")
		var wg sync.WaitGroup
		for range 100 {
			claim := nodeClaim(nc.Name, "on-demand", "m5.large", "m5.xlarge", "c5.large")
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := h.provider.Create(ctx, claim); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(h.fake.Faults().Calls("ec2", "CreateFleet")-before), "createfleet/op")
	}
}

var benchLatency = 50 * time.Millisecond

// cachedNodeClass answers Gets of one node class from memory, as the manager's cache does.
type cachedNodeClass struct{ nc *awsv1.EC2NodeClass }

func (c cachedNodeClass) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.nc.DeepCopyInto(obj.(*awsv1.EC2NodeClass))
	return nil
}

func (c cachedNodeClass) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not supported")
}
