package aws_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/interruption"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/interruptionqueue"
)

func TestInterruptionQueueOnlyWithASetting(t *testing.T) {
	if got := newHarness(t).provider.InterruptionQueue(); got != nil {
		t.Fatalf("InterruptionQueue() without INTERRUPTION_QUEUE = %v, want nil", got)
	}
}

func TestSpotInterruptionOfALaunchedClaim(t *testing.T) {
	h := newHarness(t)
	h.provider = h.newProvider(t, func(d *aws.Deps) {
		d.InterruptionQueue, d.SQS, d.InterruptionWait = clusterName, sqs.NewFromConfig(h.fake.AWSConfig()), -1
	})
	h.fake.CreateQueue(clusterName)
	nc := nodeClass(t, "interrupted")
	claim, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "spot", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	in := h.live()[0]
	if err := h.fake.RaiseSpotInterruption(in.ID); err != nil {
		t.Fatal(err)
	}
	source := h.provider.InterruptionQueue()
	got, err := source.ReceiveInterruptions(context.Background())
	if err != nil || len(got) != 1 || got[0].Kind != cloudprovider.InterruptionSpot || got[0].ProviderID != claim.Status.ProviderID {
		t.Fatalf("received %+v, %v; want a spot interruption of %s", got, err, claim.Status.ProviderID)
	}
	// The interrupted offering is left out of the next launch: it goes to another zone.
	again, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "spot", "m5.large"))
	if err != nil || again.Labels[v1.LabelTopologyZone] == in.Zone {
		t.Fatalf("relaunched %v, %v; want a zone other than the interrupted %s", again.Labels, err, in.Zone)
	}
	if err := source.DeleteInterruption(context.Background(), got[0].ID); err != nil {
		t.Fatal(err)
	}
}

// gatedSQS holds every DeleteMessage until want of them are waiting at once: a controller that handles a
// received batch one message at a time never gets past the first, and fails when ctx ends.
type gatedSQS struct {
	interruptionqueue.SQSAPI
	want    int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func (g *gatedSQS) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	g.mu.Lock()
	g.waiting++
	if g.waiting == g.want {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.SQSAPI.DeleteMessage(ctx, in, opts...)
}

// TestAReceivedBatchIsHandledConcurrently: ten stop notices for ten of the cluster's instances arrive in one
// receive of the fake SQS queue; the interruption controller handles them at once (ten deletes wait on each
// other), deletes every NodeClaim and, only then, every message.
func TestAReceivedBatchIsHandledConcurrently(t *testing.T) {
	const batch = interruption.Parallelism
	h := newHarness(t)
	gate := &gatedSQS{SQSAPI: sqs.NewFromConfig(h.fake.AWSConfig()), want: batch, open: make(chan struct{})}
	h.provider = h.newProvider(t, func(d *aws.Deps) { d.InterruptionQueue, d.SQS, d.InterruptionWait = clusterName, gate, -1 })
	h.fake.CreateQueue(clusterName)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var claims []*v1.NodeClaim
	for range batch {
		in := h.fake.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand,
			Tags: map[string]string{instance.ClusterTagKey(clusterName): "owned", instance.NodePoolTagKey: "default"}})
		claim := nodeClaim("batch", v1.CapacityTypeOnDemand, "m5.large")
		claim.UID = ""
		if err := env.Client.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
		claim.Status.ProviderID = "aws:///us-east-1a/" + in.ID
		if err := env.Client.Status().Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
		claims = append(claims, claim)
		if err := h.fake.RaiseStateChange(in.ID, "stopping"); err != nil {
			t.Fatal(err)
		}
	}
	controller := interruption.NewController(interruption.Deps{Client: env.Client, Source: h.provider.InterruptionQueue(),
		Clock: h.clock, Recorder: &eventsfake.Recorder{}, Registerer: prometheus.NewRegistry()})
	if _, err := controller.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatalf("handling the batch: %v (deletes waiting together: %d of %d)", err, gate.waiting, batch)
	}
	for _, claim := range claims {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), &v1.NodeClaim{}); !apierrors.IsNotFound(err) {
			t.Errorf("nodeclaim %s of a stopped instance is still there (%v)", claim.Name, err)
		}
	}
	if left := h.fake.QueueMessages(clusterName); len(left) != 0 {
		t.Fatalf("%d messages left in the queue, want none", len(left))
	}
}
