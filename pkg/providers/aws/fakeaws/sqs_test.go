package fakeaws

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestSQSQueueLifecycleThroughTheSDK(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r := New(Options{Clock: clock}).Start()
	t.Cleanup(r.Close)
	client := sqs.NewFromConfig(r.AWSConfig())
	ctx := context.Background()

	_, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("demo")})
	wantCode(t, "sqs", err, "QueueDoesNotExist")
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("demo"),
		Attributes: map[string]string{"VisibilityTimeout": "20"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("demo")})
	if err != nil || aws.ToString(got.QueueUrl) != aws.ToString(created.QueueUrl) ||
		aws.ToString(got.QueueUrl) != "https://sqs.us-east-1.amazonaws.com/000000000000/demo" {
		t.Fatalf("GetQueueUrl = %v, %v", aws.ToString(got.QueueUrl), err)
	}
	url := got.QueueUrl
	// The SDK checks the MD5 of what it sends and receives, so these calls also check the fake's digests.
	for _, body := range []string{"first", "second"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	received, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp}})
	if err != nil || len(received.Messages) != 2 || aws.ToString(received.Messages[0].Body) != "first" {
		t.Fatalf("ReceiveMessage = %+v, %v", received, err)
	}
	if ts := received.Messages[0].Attributes["SentTimestamp"]; ts != "1767323045000" {
		t.Fatalf("SentTimestamp = %q", ts)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil || attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "2" {
		t.Fatalf("GetQueueAttributes = %+v, %v", attrs, err)
	}

	// Deleted messages are gone; the other comes back once its visibility timeout (the queue's 20 s) passes.
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: received.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	again, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
	if err != nil || len(again.Messages) != 0 {
		t.Fatalf("ReceiveMessage before the visibility timeout = %+v, %v", again.Messages, err)
	}
	clock.Step(20 * time.Second)
	again, err = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
	if err != nil || len(again.Messages) != 1 || aws.ToString(again.Messages[0].Body) != "second" ||
		aws.ToString(again.Messages[0].ReceiptHandle) == aws.ToString(received.Messages[1].ReceiptHandle) {
		t.Fatalf("ReceiveMessage after the visibility timeout = %+v, %v", again.Messages, err)
	}
	_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: aws.String("bogus")})
	wantCode(t, "sqs", err, "ReceiptHandleIsInvalid")
}

func TestSQSLongPollReturnsWhenAMessageArrives(t *testing.T) {
	r := start(t)
	url := r.CreateQueue("demo")
	client := sqs.NewFromConfig(r.AWSConfig())
	done := make(chan *sqs.ReceiveMessageOutput)
	go func() {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	// The poll either started before the send (and is woken by it) or after it (and finds the message).
	r.SendToQueues("hello")
	if out := <-done; out == nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "hello" {
		t.Fatalf("long poll = %+v", out)
	}
}

func TestSpotInterruptionWarnsThenReclaims(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r := New(Options{Clock: clock}).Start()
	t.Cleanup(r.Close)
	r.CreateQueue("demo")
	in := r.RunInstance(Instance{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"})
	if err := r.RaiseSpotInterruption("i-0000000000000dead"); err == nil {
		t.Fatal("raised an interruption for an instance the fake never started")
	}
	if err := r.RaiseSpotInterruption(in.ID); err != nil {
		t.Fatal(err)
	}
	var warning struct {
		DetailType string `json:"detail-type"`
		Source     string
		Time       string
		Detail     map[string]string
	}
	bodies := r.QueueMessages("demo")
	if len(bodies) != 1 || json.Unmarshal([]byte(bodies[0]), &warning) != nil ||
		warning.DetailType != "EC2 Spot Instance Interruption Warning" || warning.Source != "aws.ec2" ||
		warning.Time != "2026-01-02T03:04:05Z" || warning.Detail["instance-id"] != in.ID || warning.Detail["instance-action"] != "terminate" {
		t.Fatalf("queue = %v", bodies)
	}
	clock.Step(SpotInterruptionNotice - time.Second)
	if got := r.Instances()[0]; got.State != StateRunning {
		t.Fatalf("reclaimed before the notice ran out: %+v", got)
	}
	clock.Step(time.Second)
	if got := r.Instances()[0]; got.State != StateTerminated || got.StateReason != ReasonSpotReclaimed {
		t.Fatalf("not reclaimed after the notice: %+v", got)
	}
	if bodies := r.QueueMessages("demo"); len(bodies) != 2 || !json.Valid([]byte(bodies[1])) {
		t.Fatalf("queue = %v, want the warning and the terminated state change", bodies)
	}
}
