package reservationdemotion

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/operator/poll"
)

// Interval is how often the instances are compared with the NodeClaims (Karpenter's requeue).
const Interval = time.Minute

// Instances lists what the cloud runs for the cluster, one NodeClaim per instance with its provider ID and
// capacity type label (the AWS CloudProvider's List).
type Instances interface {
	List(ctx context.Context) ([]*v1.NodeClaim, error)
}

// Controller demotes reserved NodeClaims and Nodes whose instance runs on-demand. Build it with New.
type Controller struct {
	kube      client.Client
	instances Instances
}

// New returns the controller.
func New(kube client.Client, instances Instances) *Controller {
	return &Controller{kube: kube, instances: instances}
}

// Name is Karpenter's name for the controller.
func (c *Controller) Name() string { return "capacityreservation.capacitytype" }

// Register runs the controller once at start and then every Interval.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return poll.Register(mgr, c.Name(), c)
}

// Reconcile relabels every reserved NodeClaim (not being deleted) whose instance the cloud reports as
// on-demand, and its registered Nodes. Only that direction: an on-demand instance never becomes reserved.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	running, err := c.instances.List(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing instances, %w", err)
	}
	onDemand := map[string]bool{}
	for _, nc := range running {
		if nc.Labels[v1.CapacityTypeLabelKey] == v1.CapacityTypeOnDemand {
			onDemand[nc.Status.ProviderID] = true
		}
	}
	var claims v1.NodeClaimList
	if err := c.kube.List(ctx, &claims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var nodes corev1.NodeList
	if err := c.kube.List(ctx, &nodes); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodes, %w", err)
	}
	nodesByProviderID := map[string][]*corev1.Node{}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		nodesByProviderID[node.Spec.ProviderID] = append(nodesByProviderID[node.Spec.ProviderID], node)
	}
	var errs []error
	for i := range claims.Items {
		nc := &claims.Items[i]
		if !nc.DeletionTimestamp.IsZero() || nc.Status.ProviderID == "" || !onDemand[nc.Status.ProviderID] {
			continue
		}
		if reserved(nc.Labels) {
			errs = append(errs, c.demote(ctx, nc))
		}
		for _, node := range nodesByProviderID[nc.Status.ProviderID] {
			// A Node not yet registered has not had the claim's labels synced; the next pass gets it.
			if node.DeletionTimestamp.IsZero() && node.Labels[v1.NodeRegisteredLabelKey] == "true" && reserved(node.Labels) {
				errs = append(errs, c.demote(ctx, node))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		if allConflicts(errs) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: Interval}, nil
}

// reservedLabels are the labels only a reserved node carries.
var reservedLabels = []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible}

func reserved(labels map[string]string) bool {
	return labels[v1.CapacityTypeLabelKey] == v1.CapacityTypeReserved
}

// demote sets the object's capacity type to on-demand and drops its reservation labels.
func (c *Controller) demote(ctx context.Context, obj client.Object) error {
	stored, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %s", obj.GetName())
	}
	labels := maps.Clone(obj.GetLabels())
	labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeOnDemand
	for _, key := range reservedLabels {
		delete(labels, key)
	}
	obj.SetLabels(labels)
	if err := c.kube.Patch(ctx, obj, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("relabelling %s as on-demand, %w", obj.GetName(), err)
	}
	log.FromContext(ctx).Info("instance left its capacity reservation, relabelled on-demand", "object", klog.KObj(obj))
	return nil
}

func allConflicts(errs []error) bool {
	for _, err := range errs {
		if err != nil && !apierrors.IsConflict(err) {
			return false
		}
	}
	return true
}
