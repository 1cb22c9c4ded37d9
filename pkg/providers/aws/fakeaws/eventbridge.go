package fakeaws

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// SpotInterruptionNotice is how long after its interruption warning EC2 reclaims a spot instance.
const SpotInterruptionNotice = 2 * time.Minute

// State reasons of terminated instances, as EC2 reports them.
const (
	// ReasonUserInitiated: someone (Lathe) terminated the instance.
	ReasonUserInitiated = "Client.UserInitiatedShutdown"
	// ReasonSpotReclaimed: EC2 reclaimed the spot instance.
	ReasonSpotReclaimed = "Server.SpotInstanceTermination"
)

// eventBridgeEvent is an event as EventBridge delivers it to an SQS target.
type eventBridgeEvent struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

// raise sends an event about the instance to every queue (as the EventBridge rules of Karpenter's
// CloudFormation template route them). It fails for an instance the fake never started.
func (s *Server) raise(instanceID, source, detailType string, detail any) error {
	return s.raiseAt(s.opts.Clock.Now(), instanceID, source, detailType, detail)
}

// raiseAt raises the event dated at; with the time given it doesn't read the clock, so it can run in a
// fake clock's AfterFunc (which holds the clock's lock).
func (s *Server) raiseAt(at time.Time, instanceID, source, detailType string, detail any) error {
	var (
		known bool
		id    uint64
	)
	s.withState(func(st *state) {
		_, known = st.instances.byID[instanceID]
		st.sqs.lastMessage++
		id = st.sqs.lastMessage
	})
	if !known {
		return instanceNotFound(instanceID)
	}
	body, err := json.Marshal(eventBridgeEvent{
		Version: "0", ID: fmt.Sprintf("7bf73129-1428-4cd3-a780-%012d", id), DetailType: detailType, Source: source,
		Account: sqsAccount, Time: at.UTC().Format(time.RFC3339), Region: s.opts.Region,
		Resources: []string{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", s.opts.Region, sqsAccount, instanceID)}, Detail: detail,
	})
	if err != nil {
		return err
	}
	s.withState(func(st *state) {
		for _, q := range st.sqs.queues {
			st.sqs.send(q, string(body), at)
		}
	})
	return nil
}

// RaiseSpotInterruption sends the instance's EC2 Spot Instance Interruption Warning, and reclaims the
// instance SpotInterruptionNotice later on the fake's clock (when it can schedule: the real clock and
// k8s.io/utils/clock/testing's fake clock can) unless ReclaimSpotInstance did it before.
func (s *Server) RaiseSpotInterruption(instanceID string) error {
	if err := s.raise(instanceID, "aws.ec2", "EC2 Spot Instance Interruption Warning",
		map[string]string{"instance-id": instanceID, "instance-action": "terminate"}); err != nil {
		return err
	}
	if c, ok := s.opts.Clock.(clock.WithDelayedExecution); ok {
		at := c.Now().Add(SpotInterruptionNotice)
		c.AfterFunc(SpotInterruptionNotice, func() { _ = s.reclaim(instanceID, at) })
	}
	return nil
}

// ReclaimSpotInstance terminates the instance as EC2 reclaiming it would (state reason
// Server.SpotInstanceTermination, its Node deleted when the fake boots instances) and sends its
// state-change notification. An instance already terminated is left as it is.
func (s *Server) ReclaimSpotInstance(instanceID string) error {
	return s.reclaim(instanceID, s.opts.Clock.Now())
}

func (s *Server) reclaim(instanceID string, at time.Time) error {
	var (
		reclaimed *Instance
		boot      *booter
		err       error
	)
	s.withState(func(st *state) {
		in, ok := st.instances.byID[instanceID]
		if !ok {
			err = instanceNotFound(instanceID)
			return
		}
		if in.State == StateTerminated {
			return
		}
		in.State, in.StateReason = StateTerminated, ReasonSpotReclaimed
		cp := in.Instance
		reclaimed, boot = &cp, st.instances.boot
	})
	if err != nil || reclaimed == nil {
		return err
	}
	s.AdjustSubnetIPs(reclaimed.SubnetID, 1)
	if boot != nil {
		boot.shutdown(*reclaimed)
	}
	return s.raiseAt(at, instanceID, "aws.ec2", "EC2 Instance State-change Notification",
		map[string]string{"instance-id": instanceID, "state": StateTerminated})
}

// RaiseStateChange sends an EC2 Instance State-change Notification for the instance; the instance's state
// itself is not changed.
func (s *Server) RaiseStateChange(instanceID, state string) error {
	return s.raise(instanceID, "aws.ec2", "EC2 Instance State-change Notification",
		map[string]string{"instance-id": instanceID, "state": state})
}

// RaiseRebalanceRecommendation sends an EC2 Instance Rebalance Recommendation for the instance.
func (s *Server) RaiseRebalanceRecommendation(instanceID string) error {
	return s.raise(instanceID, "aws.ec2", "EC2 Instance Rebalance Recommendation", map[string]string{"instance-id": instanceID})
}

// RaiseCapacityReservationInterruption sends an EC2 Capacity Reservation Instance Interruption Warning.
func (s *Server) RaiseCapacityReservationInterruption(instanceID string) error {
	return s.raise(instanceID, "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", map[string]string{
		"instance-id": instanceID, "instance-action": "terminate",
		"instance-termination-time": s.opts.Clock.Now().Add(SpotInterruptionNotice).UTC().Format(time.RFC3339)})
}

// healthDetail is the detail of an AWS Health Event.
type healthDetail struct {
	EventARN          string              `json:"eventArn"`
	Service           string              `json:"service"`
	EventTypeCode     string              `json:"eventTypeCode"`
	EventTypeCategory string              `json:"eventTypeCategory"`
	StartTime         string              `json:"startTime"`
	EndTime           string              `json:"endTime"`
	EventDescription  []map[string]string `json:"eventDescription"`
	AffectedEntities  []map[string]string `json:"affectedEntities"`
}

// RaiseScheduledChange sends an AWS Health Event announcing a scheduled stop of the instance (service EC2,
// category scheduledChange) a week from now.
func (s *Server) RaiseScheduledChange(instanceID string) error {
	start := s.opts.Clock.Now().Add(7 * 24 * time.Hour).UTC()
	return s.raise(instanceID, "aws.health", "AWS Health Event", healthDetail{
		EventARN: fmt.Sprintf("arn:aws:health:%s::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/AWS_EC2_INSTANCE_STOP_SCHEDULED_%s", s.opts.Region, instanceID),
		Service:  "EC2", EventTypeCode: "AWS_EC2_INSTANCE_STOP_SCHEDULED", EventTypeCategory: "scheduledChange",
		StartTime: start.Format(time.RFC1123), EndTime: start.Add(2 * time.Hour).Format(time.RFC1123),
		EventDescription: []map[string]string{{"language": "en_US", "latestDescription": "The instance is running on degraded hardware."}},
		AffectedEntities: []map[string]string{{"entityValue": instanceID}},
	})
}
