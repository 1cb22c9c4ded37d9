// Command karpenter-convert converts Karpenter v1alpha5/v1alpha1 and v1beta1 manifests (Provisioner,
// AWSNodeTemplate, NodePool, EC2NodeClass) into the v1 NodePools and EC2NodeClasses Lathe serves:
//
//	karpenter-convert -f provisioner.yaml -f nodetemplate.yaml > v1.yaml
//	kubectl get nodepools,ec2nodeclasses -o yaml | karpenter-convert -f - > v1.yaml
package main

import (
	"os"

	"github.com/lathe-autoscaler/lathe/pkg/convert"
)

func main() {
	os.Exit(convert.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
