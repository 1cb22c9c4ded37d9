package fakeaws

import (
	"strings"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/userdata"
)

// ParseUserData reads user data as a node of the AMI family boots from it (package userdata).
func ParseUserData(family, doc string) (BootNode, error) {
	n, err := userdata.Parse(family, doc)
	if err != nil {
		return BootNode{}, err
	}
	out := BootNode{ClusterName: n.ClusterName, ClusterEndpoint: n.ClusterEndpoint, ClusterCABundle: n.ClusterCABundle, Labels: n.Labels, Taints: n.Taints}
	if n.MaxPods != nil {
		out.MaxPods = *n.MaxPods
	}
	return out, nil
}

// familyOfImage names the AMI family of an image the fake knows, from its name as EKS names its
// optimized images ("" for an image it doesn't know or can't tell).
func (s *Server) familyOfImage(imageID string) string {
	img, ok := s.ImageByID(imageID)
	if !ok {
		return ""
	}
	name := img.Name
	switch {
	case strings.HasPrefix(name, "amazon-eks-node-al2023-"):
		return "AL2023"
	case strings.HasPrefix(name, "amazon-eks-"):
		return "AL2"
	case strings.HasPrefix(name, "bottlerocket-"):
		return "Bottlerocket"
	case strings.HasPrefix(name, "Windows_Server-2019-"):
		return "Windows2019"
	case strings.HasPrefix(name, "Windows_Server-2022-"):
		return "Windows2022"
	case strings.HasPrefix(name, "Windows_Server-2025-"):
		return "Windows2025"
	}
	return ""
}
