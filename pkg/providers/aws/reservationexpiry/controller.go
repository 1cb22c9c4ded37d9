package reservationexpiry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/operator/poll"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/capacityreservation"
)

// Interval is how often the reservations are read again (Karpenter's requeue).
const Interval = time.Minute

// parallelism is how many NodeClaims are deleted at once.
const parallelism = 10

// Reservations lists capacity reservations by selector terms (capacityreservation.Provider).
type Reservations interface {
	List(ctx context.Context, terms []awsv1.CapacityReservationSelectorTerm) ([]ec2types.CapacityReservation, error)
}

// Controller deletes the NodeClaims in expiring capacity blocks. Build it with New.
type Controller struct {
	kube         client.Client
	reservations Reservations
	clock        clock.PassiveClock
}

// New returns the controller.
func New(kube client.Client, reservations Reservations, clk clock.PassiveClock) *Controller {
	return &Controller{kube: kube, reservations: reservations, clock: clk}
}

// Name is Karpenter's name for the controller.
func (c *Controller) Name() string { return "capacityreservation.expiration" }

// Register runs the controller once at start and then every Interval.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return poll.Register(mgr, c.Name(), c)
}

// Reconcile deletes the NodeClaims whose capacity block is expiring.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	claims, err := c.reservedClaims(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	expiring, err := c.expiring(ctx, claims)
	if err != nil {
		return reconcile.Result{}, err
	}
	claims = slices.DeleteFunc(claims, func(nc *v1.NodeClaim) bool {
		return !expiring[nc.Labels[awsv1.LabelCapacityReservationID]] || !nc.DeletionTimestamp.IsZero()
	})
	errs := make([]error, len(claims))
	workqueue.ParallelizeUntil(ctx, parallelism, len(claims), func(i int) {
		nc := claims[i]
		if err := c.kube.Delete(ctx, nc); err != nil {
			errs[i] = client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s, %w", nc.Name, err))
			return
		}
		log.FromContext(ctx).Info("deleting nodeclaim ahead of its capacity block's end", "NodeClaim", klog.KObj(nc),
			"capacity-reservation-id", nc.Labels[awsv1.LabelCapacityReservationID])
	})
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: Interval}, nil
}

// reservedClaims are the AWS provider's NodeClaims that run in a capacity reservation.
func (c *Controller) reservedClaims(ctx context.Context) ([]*v1.NodeClaim, error) {
	list := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, list, client.HasLabels{awsv1.LabelCapacityReservationID}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var out []*v1.NodeClaim
	for i := range list.Items {
		nc := &list.Items[i]
		if ref := nc.Spec.NodeClassRef; ref != nil && ref.Group == awsv1.Group && nc.Labels[awsv1.LabelCapacityReservationID] != "" {
			out = append(out, nc)
		}
	}
	return out, nil
}

// expiring returns the IDs of the claims' reservations that are expiring capacity blocks.
func (c *Controller) expiring(ctx context.Context, claims []*v1.NodeClaim) (map[string]bool, error) {
	var terms []awsv1.CapacityReservationSelectorTerm
	seen := map[string]bool{}
	for _, nc := range claims {
		if id := nc.Labels[awsv1.LabelCapacityReservationID]; !seen[id] {
			seen[id] = true
			terms = append(terms, awsv1.CapacityReservationSelectorTerm{ID: id})
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	found, err := c.reservations.List(ctx, terms)
	if err != nil {
		return nil, fmt.Errorf("listing the nodeclaims' capacity reservations, %w", err)
	}
	now := c.clock.Now()
	out := map[string]bool{}
	for _, r := range found {
		status, err := capacityreservation.Status(r, now)
		if err != nil {
			log.FromContext(ctx).Error(err, "reading capacity reservation", "capacity-reservation-id", aws.ToString(r.CapacityReservationId))
			continue
		}
		if status.State == capacityreservation.StateExpiring {
			out[status.ID] = true
		}
	}
	return out, nil
}
