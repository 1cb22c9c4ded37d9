package ami

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
)

// ServerVersion asks the API server for its version, as Karpenter does outside EKS: major.minor with any
// "+" suffix of the minor dropped.
func ServerVersion(d discovery.ServerVersionInterface) Version {
	return func(context.Context) (string, error) {
		v, err := d.ServerVersion()
		if err != nil {
			return "", fmt.Errorf("getting the server version, %w", err)
		}
		return v.Major + "." + strings.TrimSuffix(v.Minor, "+"), nil
	}
}
