// Package instancestatus finds the cluster's unhealthy EC2 instances with DescribeInstanceStatus, as the
// AWS provider's cloudprovider.InstanceHealthSource:
//
//	instance status check failed for 2 minutes or more   InstanceStatus  instance_status
//	system status check failed for 2 minutes or more     SystemStatus    system_status
//	a scheduled event (reboot, maintenance, retirement,  EventStatus     event_status (at once)
//	stop)
//
// EBS status checks are left alone, as Karpenter leaves them: a failing volume may be a pod's, not the
// node's. DescribeInstanceStatus can't filter by tag, so the account's matching instances are looked up
// among the cluster's (instance.Provider.Find) and the others dropped. Credentials without
// ec2:DescribeInstanceStatus (UnauthorizedOperation) answer an error wrapping cloudprovider.ErrNotPermitted.
package instancestatus
