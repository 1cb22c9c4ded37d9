// Package interruptionqueue reads the SQS interruption queue (INTERRUPTION_QUEUE) that EventBridge rules
// fill with EC2 and AWS Health events, as the AWS provider's cloudprovider.InterruptionSource:
//
//	EC2 Spot Instance Interruption Warning                    spot_interrupted (the offering is marked unavailable)
//	EC2 Instance Rebalance Recommendation                     rebalance_recommendation
//	EC2 Instance State-change Notification                    instance_stopped (stopping, stopped),
//	                                                          instance_terminated (shutting-down, terminated)
//	AWS Health Event (service EC2, category scheduledChange)  scheduled_change, one per affected instance
//	EC2 Capacity Reservation Instance Interruption Warning    capacity_reservation_interrupted (the reservation
//	                                                          has no room until EC2 reports it again)
//	anything else                                             no_op
//
// Events name instances by ID; the queue finds the cluster's instances with those IDs to give each message
// the instance's provider ID (aws:///<zone>/<id>), and leaves it empty for an instance that isn't the
// cluster's, so that the message is only acknowledged. A body that isn't an event is returned with Err set
// and deleted by the controller, never retried. Receives long-poll (20 s) for up to 10 messages and hide
// them for 20 s while they are handled.
package interruptionqueue
