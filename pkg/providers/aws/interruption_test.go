package aws_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
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
