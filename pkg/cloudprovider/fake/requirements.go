package fake

import (
	"fmt"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

func schedulingRequirements(nodeClaim *v1.NodeClaim) (scheduling.Requirements, error) {
	reqs, err := scheduling.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		return nil, fmt.Errorf("parsing requirements of nodeclaim %q, %w", nodeClaim.Name, err)
	}
	return reqs, nil
}
