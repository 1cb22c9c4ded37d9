package catalog

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// EC2RepairPolicies are Karpenter's AWS provider's repair policies, which both the AWS provider and the
// simulated one report: Ready False or Unknown for 30 minutes, accelerated hardware not ready for 10
// minutes, and storage, networking, kernel or container runtime not ready for 30 minutes.
func EC2RepairPolicies() []cloudprovider.RepairPolicy {
	policy := func(condition string, status corev1.ConditionStatus, d time.Duration) cloudprovider.RepairPolicy {
		return cloudprovider.RepairPolicy{ConditionType: corev1.NodeConditionType(condition), ConditionStatus: status, TolerationDuration: d}
	}
	return []cloudprovider.RepairPolicy{
		policy(string(corev1.NodeReady), corev1.ConditionFalse, 30*time.Minute),
		policy(string(corev1.NodeReady), corev1.ConditionUnknown, 30*time.Minute),
		policy("AcceleratedHardwareReady", corev1.ConditionFalse, 10*time.Minute),
		policy("StorageReady", corev1.ConditionFalse, 30*time.Minute),
		policy("NetworkingReady", corev1.ConditionFalse, 30*time.Minute),
		policy("KernelReady", corev1.ConditionFalse, 30*time.Minute),
		policy("ContainerRuntimeReady", corev1.ConditionFalse, 30*time.Minute),
	}
}
