package interruptionqueue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/utils/clock"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
)

// SQSAPI is the part of the SQS client the queue calls (IAM: sqs:GetQueueUrl, sqs:ReceiveMessage,
// sqs:DeleteMessage).
type SQSAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Instances finds the cluster's instances by ID (instance.Provider.Find).
type Instances interface {
	Find(ctx context.Context, ids []string) (map[string]*instance.Instance, error)
}

// Unavailable is the unavailable-offerings cache.
type Unavailable interface {
	MarkUnavailable(instanceType, zone, capacityType string)
}

// Reservations is what is known of the capacity reservations' room (capacityreservation.Provider).
type Reservations interface {
	MarkUnavailable(ids ...string)
}

// Receive parameters, as Karpenter's AWS provider uses them.
const (
	// DefaultWait is the long poll: how long a receive waits for a message (SQS's maximum).
	DefaultWait = 20 * time.Second
	// maxMessages is the most messages one receive returns (SQS's maximum).
	maxMessages = 10
	// visibilityTimeout hides a received message from other receives while it is handled.
	visibilityTimeout = 20 * time.Second
)

// Options configure a Queue.
type Options struct {
	// SQS is the SQS client. Required.
	SQS SQSAPI
	// Name is the queue's name (INTERRUPTION_QUEUE); its URL is looked up on the first receive. Required.
	Name string
	// Instances resolves the instances events name to the cluster's instances. Required.
	Instances Instances
	// Unavailable receives the offerings of spot-interrupted instances. Required.
	Unavailable Unavailable
	// Reservations receives the reservations of instances whose capacity reservation EC2 is reclaiming, so
	// that nothing more is planned into them until EC2 reports their room again. Nil when Lathe doesn't
	// launch into reservations (the ReservedCapacity gate is off).
	Reservations Reservations
	// Clock dates messages without an event time. Default the real clock.
	Clock clock.PassiveClock
	// Wait is the long poll; DefaultWait when zero, none (a short poll) when negative.
	Wait time.Duration
}

// Queue reads the interruption queue; it implements cloudprovider.InterruptionSource. Build it with New.
type Queue struct {
	opts Options

	mu  sync.Mutex
	url string
	// parts counts, by receipt handle, the messages of the last receive not yet deleted: an event about
	// several instances is one message per instance, and its SQS message is deleted with the last of them.
	parts map[string]int
}

var _ cloudprovider.InterruptionSource = (*Queue)(nil)

// New returns the queue.
func New(opts Options) *Queue {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Wait == 0 {
		opts.Wait = DefaultWait
	}
	return &Queue{opts: opts, parts: map[string]int{}}
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.opts.Name }

// ReceiveInterruptions long-polls the queue and reads what it received: one message per instance an event
// names, with the instance's provider ID when it is one of the cluster's (empty otherwise, so the message
// is only acknowledged); a no_op message for events Lathe ignores; a message with Err for a body it can't
// read. A spot interruption marks the instance's offering unavailable, a capacity reservation interruption
// the instance's reservation.
func (q *Queue) ReceiveInterruptions(ctx context.Context) ([]cloudprovider.InterruptionMessage, error) {
	url, err := q.queueURL(ctx)
	if err != nil {
		return nil, err
	}
	out, err := q.opts.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: maxMessages,
		VisibilityTimeout: int32(visibilityTimeout / time.Second), WaitTimeSeconds: int32(max(q.opts.Wait, 0) / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return nil, fmt.Errorf("receiving messages from queue %s, %w", q.opts.Name, err)
	}
	events := make([]event, len(out.Messages))
	errs := make([]error, len(out.Messages))
	var ids []string
	for i, m := range out.Messages {
		events[i], errs[i] = parseEvent(aws.ToString(m.Body))
		ids = append(ids, events[i].instanceIDs...)
	}
	instances, err := q.opts.Instances.Find(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("finding the instances of interruption messages, %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	clear(q.parts)
	var messages []cloudprovider.InterruptionMessage
	for i, m := range out.Messages {
		messages = append(messages, q.read(m, events[i], errs[i], instances)...)
	}
	return messages, nil
}

// read turns one SQS message into interruption messages, and marks what the event says is gone.
func (q *Queue) read(m sqstypes.Message, e event, err error, instances map[string]*instance.Instance) []cloudprovider.InterruptionMessage {
	handle := aws.ToString(m.ReceiptHandle)
	at := e.time
	if at.IsZero() {
		at = sentTime(m, q.opts.Clock.Now())
	}
	if err != nil || len(e.instanceIDs) == 0 {
		return []cloudprovider.InterruptionMessage{{ID: handle, Kind: e.kind, Time: at, Err: err}}
	}
	out := make([]cloudprovider.InterruptionMessage, 0, len(e.instanceIDs))
	for i, id := range e.instanceIDs {
		msg := cloudprovider.InterruptionMessage{ID: partID(handle, i, len(e.instanceIDs)), Kind: e.kind, Time: at}
		if in, ok := instances[id]; ok && in.Zone != "" {
			msg.ProviderID = in.ProviderID()
			q.markUnavailable(e.kind, in)
		}
		out = append(out, msg)
	}
	if len(out) > 1 {
		q.parts[handle] = len(out)
	}
	return out
}

// markUnavailable keeps the solver from planning into what an interruption takes away, as Karpenter does:
// a spot interruption marks the instance's spot offering unavailable (for the unavailable-offerings TTL); a
// capacity reservation interruption leaves the instance's reservation no room until EC2 reports it again.
func (q *Queue) markUnavailable(kind cloudprovider.InterruptionKind, in *instance.Instance) {
	switch {
	case kind == cloudprovider.InterruptionSpot:
		q.opts.Unavailable.MarkUnavailable(in.InstanceType, in.Zone, v1.CapacityTypeSpot)
	case kind == cloudprovider.InterruptionCapacityReservation && in.CapacityReservationID != "" && q.opts.Reservations != nil:
		q.opts.Reservations.MarkUnavailable(in.CapacityReservationID)
	}
}

// partSeparator joins a receipt handle and a part number (receipt handles are base64, without spaces).
const partSeparator = " part "

func partID(handle string, i, n int) string {
	if n == 1 {
		return handle
	}
	return handle + partSeparator + strconv.Itoa(i)
}

// sentTime is when SQS received the message, or now when it doesn't say.
func sentTime(m sqstypes.Message, now time.Time) time.Time {
	ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return now
	}
	return time.UnixMilli(ms)
}

// DeleteInterruption deletes the SQS message, once every instance of its event has been handled.
func (q *Queue) DeleteInterruption(ctx context.Context, id string) error {
	handle, last := q.handled(id)
	if !last {
		return nil
	}
	url, err := q.queueURL(ctx)
	if err != nil {
		return err
	}
	if _, err := q.opts.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle)}); err != nil {
		return fmt.Errorf("deleting message from queue %s, %w", q.opts.Name, err)
	}
	return nil
}

// handled records that the message part with the ID was handled: it returns the receipt handle, and
// whether it was the message's last part.
func (q *Queue) handled(id string) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := strings.LastIndex(id, partSeparator)
	if i < 0 {
		return id, true
	}
	handle := id[:i]
	if q.parts[handle] > 1 {
		q.parts[handle]--
		return handle, false
	}
	delete(q.parts, handle)
	return handle, true
}

// queueURL looks the queue's URL up once.
func (q *Queue) queueURL(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.url != "" {
		return q.url, nil
	}
	out, err := q.opts.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.opts.Name)})
	if err != nil {
		return "", fmt.Errorf("getting the URL of queue %s, %w", q.opts.Name, err)
	}
	q.url = aws.ToString(out.QueueUrl)
	return q.url, nil
}
