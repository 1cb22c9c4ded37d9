package aws

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// UserDataInput is what a node's user data is rendered from.
type UserDataInput struct {
	NodeClass                                     *awsv1.EC2NodeClass
	Family                                        string
	ClusterName, ClusterEndpoint, ClusterCABundle string
	ClusterDNS, ClusterCIDR                       string
	// Labels and Taints are what the node registers with (the NodeClaim's, startup taints and the
	// unregistered taint included).
	Labels map[string]string
	Taints []corev1.Taint
}

// UserDataRenderer renders a node's user data document.
type UserDataRenderer func(UserDataInput) (string, error)
