// Package scheme builds the runtime scheme Lathe's clients use: the Kubernetes built-in types plus NodePool,
// NodeClaim and EC2NodeClass.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// New returns a new scheme with every type Lathe reads or writes.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for name, add := range map[string]func(*runtime.Scheme) error{
		"kubernetes": clientgoscheme.AddToScheme,
		v1.Group:     v1.AddToScheme,
		awsv1.Group:  awsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("adding %s types to scheme, %w", name, err)
		}
	}
	return s, nil
}
