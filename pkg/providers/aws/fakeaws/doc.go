// Package fakeaws is a local, stateful fake of the AWS APIs Lathe's AWS provider calls: EC2 (Query
// protocol), SSM and Pricing (JSON 1.1), SQS (JSON 1.0), IAM (Query protocol) and EKS (REST-JSON), served over HTTP so
// that the real aws-sdk-go-v2 clients talk to it unchanged. It is used in-process by tests and as a
// standalone server by `make run`.
//
// # Routing
//
// Every service is served on one endpoint. A request is routed by the service name in its SigV4 credential
// scope (Authorization: AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/<service>/aws4_request), which
// the SDK always sends; signatures are not checked. Within a service, Query-protocol calls are dispatched
// on the Action form parameter, JSON calls on the X-Amz-Target header and EKS on the path.
//
// # Files
//
// server.go routes and injects faults; query.go, jsonproto.go and rest.go hold the wire formats. Each
// area of the API keeps its state and handlers in its own files (zones.go, network.go, images.go, iam.go,
// instancetypes.go, pricing.go, launchtemplates.go, fleet.go, instances.go, reservations.go, eks.go, sqs.go)
// and registers its handlers in the handler tables from an init function.
//
// # Faults
//
// Faults (faults.go) inject throttling, error codes and latency per action, for a number of calls or until
// cleared, so tests can drive the provider's retry and fallback paths through the real SDK. Faults.Calls
// counts requests as they arrive: the SDK's HTTP transport now and then closes a connection while reading
// a large answer ("use of closed network connection", aws/aws-sdk-go-v2#2737) and the SDK retries the call
// (net.ErrClosed is retryable), so a test counting calls must allow for a retry.
//
// # Interruption events
//
// SQS queues (sqs.go) keep messages in order, hide received ones for their visibility timeout on the fake's
// clock and hold a long poll open (in real time) until a message arrives. The Raise* methods
// (eventbridge.go) put EventBridge-shaped events about an instance into every queue, as the rules of
// Karpenter's CloudFormation template route them: a spot interruption warning (and the instance reclaimed
// SpotInterruptionNotice later on the fake's clock, or at once with ReclaimSpotInstance), a rebalance
// recommendation, a state change, an AWS Health scheduled change, a capacity reservation interruption.
// A terminated instance's StateReason says whether it was terminated by its user or reclaimed.
//
// # Policy
//
// With Options.EnforcePolicy (policy.go), the fake answers as AWS does for a controller role holding only
// Karpenter's getting-started controller policy: actions it doesn't name are refused (UnauthorizedOperation,
// AccessDenied, AccessDeniedException) and its tag conditions on what is created, used, tagged and deleted
// are checked, so tests prove Lathe runs under a role kept from Karpenter.
//
// # Boot
//
// With BootNodesInto (boot.go), an instance CreateFleet starts boots like a node: its launch template's
// user data is read as the image's AMI family would (package userdata) and, when it names the cluster, a
// kwok-managed Node with provider ID aws:///<zone>/<instance-id>, the document's labels and taints and the
// instance type's capacity registers; a document the node can't read, or for another cluster, never joins.
// Terminating the instance deletes its Node.
package fakeaws
