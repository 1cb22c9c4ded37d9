package nodeclass

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// waitingRequeue is how often a finalizer waiting on NodeClaims looks again (their deletion also wakes it).
const waitingRequeue = 10 * time.Minute

// finalize waits until no NodeClaim uses the node class, deletes the instance profiles Lathe created for
// it and runs the cleanups, then releases the finalizer.
func (c *Controller) finalize(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nodeClass, TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	users, err := NodeClaimsUsing(ctx, c.Client, nodeClass.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(users) > 0 {
		c.publish(waitingOnNodeClaims(nodeClass, users))
		return reconcile.Result{RequeueAfter: waitingRequeue}, nil
	}
	if err := c.deleteInstanceProfiles(ctx, nodeClass); err != nil {
		return reconcile.Result{}, err
	}
	for _, cleanup := range c.Cleanups {
		if err := cleanup(ctx, nodeClass); err != nil {
			return reconcile.Result{}, err
		}
	}
	stored := nodeClass.DeepCopy()
	controllerutil.RemoveFinalizer(nodeClass, TerminationFinalizer)
	if err := c.Client.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return conflictRequeue(fmt.Errorf("removing the finalizer, %w", err))
	}
	return reconcile.Result{}, nil
}

// deleteInstanceProfiles deletes every profile under the node class's path: those Lathe made for it.
func (c *Controller) deleteInstanceProfiles(ctx context.Context, nodeClass *awsv1.EC2NodeClass) error {
	profiles := c.Providers.InstanceProfiles
	found, err := profiles.List(ctx, profiles.Path(nodeClass))
	if err != nil {
		return err
	}
	for _, p := range found {
		if err := profiles.Delete(ctx, aws.ToString(p.InstanceProfileName)); err != nil {
			return err
		}
	}
	return nil
}

// NodeClaimsUsing lists the names of the NodeClaims whose nodeClassRef names the EC2NodeClass.
func NodeClaimsUsing(ctx context.Context, c client.Reader, nodeClass string) ([]string, error) {
	claims := &v1.NodeClaimList{}
	if err := c.List(ctx, claims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var out []string
	for _, nc := range claims.Items {
		if ref := nc.Spec.NodeClassRef; ref != nil && ref.Group == awsv1.Group && ref.Kind == "EC2NodeClass" && ref.Name == nodeClass {
			out = append(out, nc.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (c *Controller) publish(e events.Event) {
	if c.Recorder != nil {
		c.Recorder.Publish(e)
	}
}

// waitingOnNodeClaims is the event a finalizer publishes while NodeClaims still use the class (up to five
// named, as Karpenter does).
func waitingOnNodeClaims(nodeClass *awsv1.EC2NodeClass, names []string) events.Event {
	shown := names
	if len(shown) > 5 {
		shown = append(append([]string(nil), names[:5]...), fmt.Sprintf("and %d other(s)", len(names)-5))
	}
	return events.Event{
		InvolvedObject: nodeClass,
		Type:           corev1.EventTypeNormal,
		Reason:         "WaitingOnNodeClaimTermination",
		Message:        "Waiting on NodeClaim termination for " + strings.Join(shown, ", "),
		DedupeValues:   []string{string(nodeClass.UID)},
	}
}
