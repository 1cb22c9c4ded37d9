package interruptionqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/interruptionqueue"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
)

const cluster = "demo"

// fixture is a queue named after the cluster in a fake AWS, read through the real SDK clients.
type fixture struct {
	aws         *fakeaws.Running
	clock       *clocktesting.FakeClock
	unavailable *unavailable.Offerings
	queue       *interruptionqueue.Queue
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	running := fakeaws.New(fakeaws.Options{Clock: clock}).Start()
	t.Cleanup(running.Close)
	running.CreateQueue(cluster)
	cfg := running.AWSConfig()
	offerings := unavailable.New(clock)
	return &fixture{aws: running, clock: clock, unavailable: offerings, queue: interruptionqueue.New(interruptionqueue.Options{
		SQS: sqs.NewFromConfig(cfg), Name: cluster, Clock: clock, Wait: -1, Unavailable: offerings,
		Instances: instance.New(instance.Deps{EC2: ec2.NewFromConfig(cfg), ClusterName: cluster}),
	})}
}

// run starts an instance, the cluster's when owned.
func (f *fixture) run(zone string, owned bool) fakeaws.Instance {
	tags := map[string]string{}
	if owned {
		tags[instance.ClusterTagKey(cluster)] = "owned"
		tags[instance.NodePoolTagKey] = "default"
	}
	return f.aws.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: zone, CapacityType: "spot", Tags: tags})
}

func (f *fixture) receive(t *testing.T) []cloudprovider.InterruptionMessage {
	t.Helper()
	got, err := f.queue.ReceiveInterruptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *fixture) remove(t *testing.T, msg cloudprovider.InterruptionMessage) {
	t.Helper()
	if err := f.queue.DeleteInterruption(context.Background(), msg.ID); err != nil {
		t.Fatal(err)
	}
}

func TestSpotInterruptionOfAClusterInstance(t *testing.T) {
	f := newFixture(t)
	in := f.run("us-east-1b", true)
	if err := f.aws.RaiseSpotInterruption(in.ID); err != nil {
		t.Fatal(err)
	}
	sent := f.clock.Now()
	f.clock.Step(5 * time.Second)
	got := f.receive(t)
	if len(got) != 1 || got[0].Kind != cloudprovider.InterruptionSpot || got[0].ProviderID != "aws:///us-east-1b/"+in.ID ||
		!got[0].Time.Equal(sent) || got[0].Err != nil {
		t.Fatalf("received %+v", got)
	}
	if !f.unavailable.IsUnavailable("m5.large", "us-east-1b", "spot") || f.unavailable.IsUnavailable("m5.large", "us-east-1a", "spot") {
		t.Fatal("the interrupted offering (and only it) is marked unavailable")
	}
	if again := f.receive(t); len(again) != 0 {
		t.Fatalf("received while hidden: %+v", again)
	}
	f.remove(t, got[0])
	if left := f.aws.QueueMessages(cluster); len(left) != 0 {
		t.Fatalf("queue after delete = %v", left)
	}
}

func TestAMessageNotDeletedIsReceivedAgain(t *testing.T) {
	f := newFixture(t)
	in := f.run("us-east-1a", true)
	if err := f.aws.RaiseStateChange(in.ID, "stopping"); err != nil {
		t.Fatal(err)
	}
	first := f.receive(t)
	f.clock.Step(20 * time.Second)
	second := f.receive(t)
	if len(first) != 1 || len(second) != 1 || second[0].Kind != cloudprovider.InterruptionStopped || second[0].ID == first[0].ID {
		t.Fatalf("first %+v, second %+v", first, second)
	}
	f.remove(t, second[0])
	if left := f.aws.QueueMessages(cluster); len(left) != 0 {
		t.Fatalf("queue after delete = %v", left)
	}
}

func TestAnInstanceNotTheClustersIsOnlyAcknowledged(t *testing.T) {
	f := newFixture(t)
	in := f.run("us-east-1a", false)
	if err := f.aws.RaiseSpotInterruption(in.ID); err != nil {
		t.Fatal(err)
	}
	got := f.receive(t)
	if len(got) != 1 || got[0].Kind != cloudprovider.InterruptionSpot || got[0].ProviderID != "" {
		t.Fatalf("received %+v", got)
	}
	if f.unavailable.IsUnavailable("m5.large", "us-east-1a", "spot") {
		t.Fatal("an instance not the cluster's marks nothing unavailable")
	}
	f.remove(t, got[0])
	if left := f.aws.QueueMessages(cluster); len(left) != 0 {
		t.Fatalf("queue after delete = %v", left)
	}
}

func TestAScheduledChangeForTwoInstancesIsDeletedWithItsLastPart(t *testing.T) {
	f := newFixture(t)
	a, b := f.run("us-east-1a", true), f.run("us-east-1c", true)
	f.aws.SendToQueues(`{"version":"0","source":"aws.health","detail-type":"AWS Health Event","time":"2026-03-04T05:00:00Z",
		"detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"` + a.ID + `"},{"entityValue":"` + b.ID + `"}]}}`)
	got := f.receive(t)
	if len(got) != 2 || got[0].ProviderID != "aws:///us-east-1a/"+a.ID || got[1].ProviderID != "aws:///us-east-1c/"+b.ID ||
		got[0].Kind != cloudprovider.InterruptionScheduledChange || got[0].ID == got[1].ID {
		t.Fatalf("received %+v", got)
	}
	f.remove(t, got[1])
	if left := f.aws.QueueMessages(cluster); len(left) != 1 {
		t.Fatalf("queue after deleting one part = %v", left)
	}
	f.remove(t, got[0])
	if left := f.aws.QueueMessages(cluster); len(left) != 0 {
		t.Fatalf("queue after deleting both parts = %v", left)
	}
}

func TestUnreadableAndIgnoredMessages(t *testing.T) {
	f := newFixture(t)
	in := f.run("us-east-1a", true)
	f.aws.SendToQueues("{not an event")
	if err := f.aws.RaiseStateChange(in.ID, "running"); err != nil {
		t.Fatal(err)
	}
	got := f.receive(t)
	if len(got) != 2 || got[0].Err == nil || got[1].Err != nil || got[1].Kind != cloudprovider.InterruptionNoOp || got[1].ProviderID != "" {
		t.Fatalf("received %+v", got)
	}
	if !got[0].Time.Equal(f.clock.Now()) {
		t.Fatalf("an unreadable message is dated when SQS received it: %s", got[0].Time)
	}
	f.remove(t, got[0])
	f.remove(t, got[1])
	if left := f.aws.QueueMessages(cluster); len(left) != 0 {
		t.Fatalf("queue after delete = %v", left)
	}
}

func TestAMissingQueueIsAnError(t *testing.T) {
	f := newFixture(t)
	cfg := f.aws.AWSConfig()
	q := interruptionqueue.New(interruptionqueue.Options{SQS: sqs.NewFromConfig(cfg), Name: "missing", Wait: -1,
		Unavailable: f.unavailable, Instances: instance.New(instance.Deps{EC2: ec2.NewFromConfig(cfg), ClusterName: cluster})})
	if _, err := q.ReceiveInterruptions(context.Background()); err == nil || !strings.Contains(err.Error(), "QueueDoesNotExist") {
		t.Fatalf("err = %v", err)
	}
}

// reservations records the reservations marked unavailable.
type reservations struct{ marked []string }

func (r *reservations) MarkUnavailable(ids ...string) { r.marked = append(r.marked, ids...) }

func TestACapacityReservationInterruptionMarksTheInstancesReservation(t *testing.T) {
	f := newFixture(t)
	marked := &reservations{}
	cfg := f.aws.AWSConfig()
	q := interruptionqueue.New(interruptionqueue.Options{SQS: sqs.NewFromConfig(cfg), Name: cluster, Clock: f.clock, Wait: -1,
		Unavailable: f.unavailable, Reservations: marked, Instances: instance.New(instance.Deps{EC2: ec2.NewFromConfig(cfg), ClusterName: cluster})})
	in := f.aws.RunInstance(fakeaws.Instance{InstanceType: "p5.48xlarge", Zone: "us-east-1a", CapacityType: "capacity-block",
		CapacityReservationID: "cr-0123456789abcdef0",
		Tags:                  map[string]string{instance.ClusterTagKey(cluster): "owned", instance.NodePoolTagKey: "default"}})
	notOurs := f.run("us-east-1b", false)
	for _, id := range []string{in.ID, notOurs.ID} {
		if err := f.aws.RaiseCapacityReservationInterruption(id); err != nil {
			t.Fatal(err)
		}
	}
	got, err := q.ReceiveInterruptions(context.Background())
	if err != nil || len(got) != 2 || got[0].Kind != cloudprovider.InterruptionCapacityReservation || got[0].ProviderID != "aws:///us-east-1a/"+in.ID {
		t.Fatalf("received %+v, %v", got, err)
	}
	if len(marked.marked) != 1 || marked.marked[0] != "cr-0123456789abcdef0" {
		t.Fatalf("reservations marked unavailable = %v, want only the cluster instance's", marked.marked)
	}
	if f.unavailable.IsUnavailable("p5.48xlarge", "us-east-1a", "spot") {
		t.Fatal("a reservation interruption marks no spot offering")
	}
}
