package provisioning

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// ConditionTypeInstanceTypesResolved is the NodePool condition that says whether the cloud provider could
// list the pool's instance types at the last provisioning pass. It is Lathe's own (Karpenter only logs
// the failure); Ready does not depend on it, so a pool whose provider recovers is provisioned from again
// at the next pass. It appears with the first failure and turns True once the types resolve again.
const ConditionTypeInstanceTypesResolved = "InstanceTypesResolved"

// Reasons of ConditionTypeInstanceTypesResolved.
const (
	reasonInstanceTypesResolved   = "InstanceTypesResolved"
	reasonInstanceTypesUnresolved = "InstanceTypesUnresolved"
)

// observeInstanceTypes publishes a Warning event on a pool whose instance types could not be listed and
// keeps its InstanceTypesResolved condition current.
func (p *Provisioner) observeInstanceTypes(ctx context.Context, pool *v1.NodePool, err error) {
	if err != nil && p.deps.Recorder != nil {
		p.deps.Recorder.Publish(InstanceTypesUnresolvedEvent(pool, err))
	}
	if werr := setInstanceTypesResolved(ctx, p.deps.Client, pool, err); werr != nil {
		log.FromContext(ctx).Error(werr, "recording whether the nodepool's instance types resolved", "NodePool", klog.KObj(pool))
	}
}

// setInstanceTypesResolved writes the pool's InstanceTypesResolved condition when its status changes: False
// with the provider's error, or True again once a pool that failed resolves. A pool that never failed gets
// no condition. A write that loses an optimistic-lock race is left to the next pass.
func setInstanceTypesResolved(ctx context.Context, c client.Client, pool *v1.NodePool, resolveErr error) error {
	existing := meta.FindStatusCondition(pool.Status.Conditions, ConditionTypeInstanceTypesResolved)
	want := metav1.Condition{Type: ConditionTypeInstanceTypesResolved, Status: metav1.ConditionTrue,
		Reason: reasonInstanceTypesResolved, ObservedGeneration: pool.Generation}
	if resolveErr != nil {
		want.Status, want.Reason, want.Message = metav1.ConditionFalse, reasonInstanceTypesUnresolved, resolveErr.Error()
	}
	if (existing == nil && resolveErr == nil) || (existing != nil && existing.Status == want.Status) {
		return nil
	}
	stored := pool.DeepCopy()
	meta.SetStatusCondition(&pool.Status.Conditions, want)
	// Other controllers write the pool's conditions too: a merge patch replaces the whole list, so it is
	// locked to the version read.
	if err := c.Status().Patch(ctx, pool, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching nodepool status, %w", err)
	}
	return nil
}
