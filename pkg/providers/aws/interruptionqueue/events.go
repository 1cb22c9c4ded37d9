package interruptionqueue

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// event is what one EventBridge event says: what happened, to which instances, and when.
type event struct {
	kind        cloudprovider.InterruptionKind
	instanceIDs []string
	time        time.Time
}

// envelope is the part of an EventBridge event common to every source.
type envelope struct {
	Version    string          `json:"version"`
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// eventType identifies the events Lathe reads, as EventBridge rules match them.
type eventType struct{ version, source, detailType string }

// instanceDetail is the detail of the EC2 events about one instance.
type instanceDetail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

// healthDetail is the part of an AWS Health Event's detail Lathe reads.
type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// readers turn the detail of each event type Lathe acts on into its kind and instances; a kind of no_op
// means an event of the type that Lathe ignores (a state or health category it doesn't act on).
var readers = map[eventType]func(json.RawMessage) (cloudprovider.InterruptionKind, []string, error){
	{"0", "aws.ec2", "EC2 Spot Instance Interruption Warning"}:                 instanceEvent(cloudprovider.InterruptionSpot),
	{"0", "aws.ec2", "EC2 Instance Rebalance Recommendation"}:                  instanceEvent(cloudprovider.InterruptionRebalance),
	{"0", "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"}: instanceEvent(cloudprovider.InterruptionCapacityReservation),
	{"0", "aws.ec2", "EC2 Instance State-change Notification"}:                 stateChange,
	{"0", "aws.health", "AWS Health Event"}:                                    scheduledChange,
}

// parseEvent reads an SQS message body as an EventBridge event. An empty body or an event of a type Lathe
// doesn't read is a no_op event; a body that isn't an event, or whose detail doesn't fit its type, is an
// error.
func parseEvent(body string) (event, error) {
	if body == "" {
		return event{kind: cloudprovider.InterruptionNoOp}, nil
	}
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return event{}, fmt.Errorf("reading the message as an EventBridge event, %w", err)
	}
	read, ok := readers[eventType{env.Version, env.Source, env.DetailType}]
	if !ok {
		return event{kind: cloudprovider.InterruptionNoOp, time: env.Time}, nil
	}
	kind, ids, err := read(env.Detail)
	if err != nil {
		return event{}, fmt.Errorf("reading the detail of %q, %w", env.DetailType, err)
	}
	if kind == cloudprovider.InterruptionNoOp {
		ids = nil
	}
	return event{kind: kind, instanceIDs: ids, time: env.Time}, nil
}

// instanceEvent reads the detail of an event about one instance.
func instanceEvent(kind cloudprovider.InterruptionKind) func(json.RawMessage) (cloudprovider.InterruptionKind, []string, error) {
	return func(raw json.RawMessage) (cloudprovider.InterruptionKind, []string, error) {
		var d instanceDetail
		if err := json.Unmarshal(raw, &d); err != nil {
			return "", nil, err
		}
		return kind, nonEmpty(d.InstanceID), nil
	}
}

// stateChange reads an instance state change: stopping or stopped, shutting-down or terminated are acted
// on; pending and running are no_op.
func stateChange(raw json.RawMessage) (cloudprovider.InterruptionKind, []string, error) {
	var d instanceDetail
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", nil, err
	}
	switch strings.ToLower(d.State) {
	case "stopping", "stopped":
		return cloudprovider.InterruptionStopped, nonEmpty(d.InstanceID), nil
	case "shutting-down", "terminated":
		return cloudprovider.InterruptionTerminated, nonEmpty(d.InstanceID), nil
	}
	return cloudprovider.InterruptionNoOp, nil, nil
}

// scheduledChange reads an AWS Health Event: EC2 scheduled changes are acted on, for every instance they
// affect; other services and categories are no_op.
func scheduledChange(raw json.RawMessage) (cloudprovider.InterruptionKind, []string, error) {
	var d healthDetail
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", nil, err
	}
	if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
		return cloudprovider.InterruptionNoOp, nil, nil
	}
	var ids []string
	for _, e := range d.AffectedEntities {
		ids = append(ids, nonEmpty(e.EntityValue)...)
	}
	return cloudprovider.InterruptionScheduledChange, ids, nil
}

func nonEmpty(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}
