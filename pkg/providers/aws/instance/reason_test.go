package instance

import "testing"

// The reasons are the AWS provider's (aws/karpenter-provider-aws v1.14.1 pkg/errors ToReasonMessage).
func TestLaunchFailureReason(t *testing.T) {
	for _, c := range []struct{ code, message, want string }{
		{"InsufficientInstanceCapacity", "We currently do not have sufficient capacity", "LaunchFailed"},
		{"UnauthorizedOperation", "You are not authorized to perform this operation", "Unauthorized"},
		{"AuthFailure.ServiceLinkedRoleCreationNotPermitted", "no permission", "SpotSLRCreationFailed"},
		{"UnauthorizedOperation", "Not authorized for images: [ami-1]", "AMIAuthorizationFailure"},
		{"InvalidParameter", "Security group sg-1 and subnet subnet-1 belong to different networks.", "SecurityGroupSubnetVPCMismatch"},
		{"InvalidLaunchTemplateId.NotFound", "gone", "LaunchTemplateNotFound"},
		{"InvalidAMIID.NotFound", "gone", "AMINotFound"},
		{"RequestLimitExceeded", "slow down", "RequestLimitExceeded"},
		{"MaxSpotInstanceCountExceeded", "quota", "SpotQuotaExceeded"},
		{"VcpuLimitExceeded", "quota", "VCPULimitExceeded"},
		{"InsufficientFreeAddressesInSubnet", "full", "InsufficientFreeAddressesInSubnet"},
	} {
		if got := launchFailureReason(c.code, c.message); got != c.want {
			t.Errorf("%s: %s = %s, want %s", c.code, c.message, got, c.want)
		}
	}
}
