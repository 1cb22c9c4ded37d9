package disruption

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// explain writes why consolidation kept a node into its NodeClaim's Consolidatable condition message, so
// `kubectl describe nodeclaim` answers "why is this node still here" as the Unconsolidatable event does.
// The nodeclaim.consolidatable controller owns the condition's status and reason and leaves the message
// of an unchanged status alone; this loop owns the message of a True condition. Only a changed message is
// written, guarded by the conditions it replaces: a concurrent write of the conditions wins and the next
// pass tries again; other writes to the claim (its pod event time, labels) don't make it fail.
func explain(ctx context.Context, kube client.Client, c *Candidate, msg string) error {
	cond := meta.FindStatusCondition(c.NodeClaim.Status.Conditions, v1.ConditionTypeConsolidatable)
	if cond == nil || cond.Status != "True" || cond.Message == msg {
		return nil
	}
	claim := c.NodeClaim.DeepCopy()
	stored := claim.DeepCopy()
	meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeConsolidatable).Message = msg
	err := fieldpatch.PatchStatus(ctx, kube, claim, stored, fieldpatch.Whole("status", "conditions"))
	if err != nil && !apierrors.IsConflict(err) {
		return client.IgnoreNotFound(fmt.Errorf("explaining in nodeclaim %s's Consolidatable condition, %w", claim.Name, err))
	}
	return nil
}
