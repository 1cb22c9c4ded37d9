package fakeaws

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sqsState is the SQS queues by name. Messages are kept in the order they were sent; a received message
// is invisible until its visibility timeout passes on the fake's clock, then it is received again.
type sqsState struct {
	queues      map[string]*sqsQueue
	lastMessage uint64
}

type sqsQueue struct {
	name       string
	created    time.Time
	visibility time.Duration
	messages   []*sqsMessage
	// sent is closed (and replaced) when a message is sent, to wake long polls.
	sent chan struct{}
}

type sqsMessage struct {
	id, body, receipt string
	sentAt, visibleAt time.Time
	receives          int
}

// sqsAccount is the account ID in the fake's queue URLs and ARNs.
const sqsAccount = "000000000000"

// Limits SQS puts on ReceiveMessage.
const (
	sqsMaxMessages       = 10
	sqsMaxWait           = 20 * time.Second
	sqsDefaultVisibility = 30 * time.Second
)

func init() {
	handleJSON("AmazonSQS.CreateQueue", (*Server).createQueue)
	handleJSON("AmazonSQS.GetQueueUrl", (*Server).getQueueURL)
	handleJSON("AmazonSQS.GetQueueAttributes", (*Server).getQueueAttributes)
	handleJSON("AmazonSQS.SendMessage", (*Server).sendMessage)
	handleJSON("AmazonSQS.DeleteMessage", (*Server).deleteMessage)
	handleJSONWaiting("AmazonSQS.ReceiveMessage", (*Server).receiveMessage)
}

// QueueURL is the URL SQS gives the queue with the name.
func (s *Server) QueueURL(name string) string {
	return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", s.opts.Region, sqsAccount, name)
}

// CreateQueue creates the queue (nothing when it exists) and returns its URL.
func (s *Server) CreateQueue(name string) string {
	s.withState(func(st *state) { st.sqs.create(name, s.opts.Clock.Now()) })
	return s.QueueURL(name)
}

// QueueMessages returns the bodies of the messages in the queue, visible or not, oldest first.
func (s *Server) QueueMessages(name string) []string {
	var out []string
	s.withState(func(st *state) {
		if q := st.sqs.queues[name]; q != nil {
			for _, m := range q.messages {
				out = append(out, m.body)
			}
		}
	})
	return out
}

// SendToQueues sends the body to every queue, as an EventBridge rule targeting them would.
func (s *Server) SendToQueues(body string) {
	s.withState(func(st *state) {
		for _, q := range st.sqs.queues {
			st.sqs.send(q, body, s.opts.Clock.Now())
		}
	})
}

func (ss *sqsState) create(name string, now time.Time) *sqsQueue {
	if ss.queues == nil {
		ss.queues = map[string]*sqsQueue{}
	}
	if q, ok := ss.queues[name]; ok {
		return q
	}
	q := &sqsQueue{name: name, created: now, visibility: sqsDefaultVisibility, sent: make(chan struct{})}
	ss.queues[name] = q
	return q
}

func (ss *sqsState) send(q *sqsQueue, body string, now time.Time) *sqsMessage {
	ss.lastMessage++
	m := &sqsMessage{id: fmt.Sprintf("00000000-0000-4000-a000-%012d", ss.lastMessage), body: body, sentAt: now, visibleAt: now}
	q.messages = append(q.messages, m)
	close(q.sent)
	q.sent = make(chan struct{})
	return m
}

// queue finds a queue by its URL (its last path segment is the name).
func (ss *sqsState) queue(url string) (*sqsQueue, error) {
	name := url[strings.LastIndex(url, "/")+1:]
	if q, ok := ss.queues[name]; ok {
		return q, nil
	}
	return nil, errorf("QueueDoesNotExist", "The specified queue does not exist.")
}

func md5Hex(body string) string {
	sum := md5.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

type createQueueRequest struct {
	QueueName  string
	Attributes map[string]string
}

func (s *Server) createQueue(body []byte) (any, error) {
	var req createQueueRequest
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	if req.QueueName == "" {
		return nil, errorf("InvalidParameterValue", "QueueName is required")
	}
	s.withState(func(st *state) {
		q := st.sqs.create(req.QueueName, s.opts.Clock.Now())
		if v, err := strconv.Atoi(req.Attributes["VisibilityTimeout"]); err == nil {
			q.visibility = time.Duration(v) * time.Second
		}
	})
	return map[string]string{"QueueUrl": s.QueueURL(req.QueueName)}, nil
}

func (s *Server) getQueueURL(body []byte) (any, error) {
	var req struct{ QueueName string }
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	var err error
	s.withState(func(st *state) { _, err = st.sqs.queue(req.QueueName) })
	if err != nil {
		return nil, err
	}
	return map[string]string{"QueueUrl": s.QueueURL(req.QueueName)}, nil
}

func (s *Server) getQueueAttributes(body []byte) (any, error) {
	var req struct{ QueueUrl string }
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	var (
		attrs map[string]string
		err   error
	)
	s.withState(func(st *state) {
		q, e := st.sqs.queue(req.QueueUrl)
		if e != nil {
			err = e
			return
		}
		now := s.opts.Clock.Now()
		visible := 0
		for _, m := range q.messages {
			if !m.visibleAt.After(now) {
				visible++
			}
		}
		attrs = map[string]string{
			"QueueArn":                              fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.opts.Region, sqsAccount, q.name),
			"ApproximateNumberOfMessages":           strconv.Itoa(visible),
			"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(len(q.messages) - visible),
			"VisibilityTimeout":                     strconv.Itoa(int(q.visibility / time.Second)),
			"CreatedTimestamp":                      strconv.FormatInt(q.created.Unix(), 10),
			"ReceiveMessageWaitTimeSeconds":         "0",
			"MessageRetentionPeriod":                "345600",
		}
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"Attributes": attrs}, nil
}

func (s *Server) sendMessage(body []byte) (any, error) {
	var req struct{ QueueUrl, MessageBody string }
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	if req.MessageBody == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter MessageBody.")
	}
	var (
		m   *sqsMessage
		err error
	)
	s.withState(func(st *state) {
		q, e := st.sqs.queue(req.QueueUrl)
		if e != nil {
			err = e
			return
		}
		m = st.sqs.send(q, req.MessageBody, s.opts.Clock.Now())
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"MessageId": m.id, "MD5OfMessageBody": md5Hex(m.body)}, nil
}

type receiveMessageRequest struct {
	QueueUrl            string
	MaxNumberOfMessages int
	VisibilityTimeout   *int
	WaitTimeSeconds     int
}

type receivedMessage struct {
	MessageId, ReceiptHandle, MD5OfBody, Body string
	Attributes                                map[string]string `json:",omitempty"`
}

// receiveMessage returns up to MaxNumberOfMessages visible messages, oldest first, and hides them for the
// visibility timeout. With none visible it waits up to WaitTimeSeconds (real time: the request is held
// open, as SQS long polling does) for one to be sent.
func (s *Server) receiveMessage(ctx context.Context, body []byte) (any, error) {
	var req receiveMessageRequest
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	if req.MaxNumberOfMessages == 0 {
		req.MaxNumberOfMessages = 1
	}
	wait := time.Duration(req.WaitTimeSeconds) * time.Second
	if req.MaxNumberOfMessages < 1 || req.MaxNumberOfMessages > sqsMaxMessages || wait < 0 || wait > sqsMaxWait {
		return nil, errorf("InvalidParameterValue", "MaxNumberOfMessages must be 1 to 10 and WaitTimeSeconds 0 to 20")
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		out, sent, err := s.receiveVisible(req)
		if err != nil || len(out) > 0 || wait == 0 {
			return map[string]any{"Messages": out}, err
		}
		select {
		case <-sent:
		case <-deadline.C:
			return map[string]any{"Messages": out}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// receiveVisible takes the visible messages, or returns the channel closed on the next send.
func (s *Server) receiveVisible(req receiveMessageRequest) ([]receivedMessage, <-chan struct{}, error) {
	var (
		out  = []receivedMessage{}
		sent <-chan struct{}
		err  error
	)
	s.withState(func(st *state) {
		q, e := st.sqs.queue(req.QueueUrl)
		if e != nil {
			err = e
			return
		}
		sent = q.sent
		now := s.opts.Clock.Now()
		visibility := q.visibility
		if req.VisibilityTimeout != nil {
			visibility = time.Duration(*req.VisibilityTimeout) * time.Second
		}
		for _, m := range q.messages {
			if len(out) == req.MaxNumberOfMessages {
				break
			}
			if m.visibleAt.After(now) {
				continue
			}
			m.receives++
			m.visibleAt = now.Add(visibility)
			m.receipt = fmt.Sprintf("%s#%d", m.id, m.receives)
			out = append(out, receivedMessage{MessageId: m.id, ReceiptHandle: m.receipt, MD5OfBody: md5Hex(m.body), Body: m.body,
				Attributes: map[string]string{"SentTimestamp": strconv.FormatInt(m.sentAt.UnixMilli(), 10),
					"ApproximateReceiveCount": strconv.Itoa(m.receives)}})
		}
	})
	return out, sent, err
}

// deleteMessage deletes the message its receipt handle names. A handle of a message already deleted, or
// received again since (SQS leaves such a delete unspecified), deletes nothing and is not an error.
func (s *Server) deleteMessage(body []byte) (any, error) {
	var req struct{ QueueUrl, ReceiptHandle string }
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	if !strings.Contains(req.ReceiptHandle, "#") {
		return nil, errorf("ReceiptHandleIsInvalid", "The input receipt handle %q is not a valid receipt handle.", req.ReceiptHandle)
	}
	var err error
	s.withState(func(st *state) {
		q, e := st.sqs.queue(req.QueueUrl)
		if e != nil {
			err = e
			return
		}
		q.messages = slices.DeleteFunc(q.messages, func(m *sqsMessage) bool { return m.receipt == req.ReceiptHandle })
	})
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
