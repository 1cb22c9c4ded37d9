package aws

import (
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/userdata"
)

// RenderUserData renders a node's user data with package userdata for the node class's AMI family.
func RenderUserData(in UserDataInput) (string, error) {
	opts := userdata.Options{
		Family: in.Family, ClusterName: in.ClusterName, ClusterEndpoint: in.ClusterEndpoint, ClusterCABundle: in.ClusterCABundle,
		ClusterCIDR: in.ClusterCIDR, Labels: in.Labels, Taints: in.Taints,
	}
	if in.ClusterDNS != "" {
		opts.ClusterDNS = []string{in.ClusterDNS}
	}
	if nc := in.NodeClass; nc != nil {
		opts.Kubelet, opts.CustomUserData, opts.InstanceStorePolicy = nc.Spec.Kubelet, nc.Spec.UserData, nc.Spec.InstanceStorePolicy
	}
	return userdata.Render(opts)
}
