package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ami"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/capacityreservation"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instanceprofile"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/securitygroup"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/subnet"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ttlcache"
)

// TerminationFinalizer holds an EC2NodeClass until what Lathe created for it is gone.
const TerminationFinalizer = awsv1.Group + "/termination"

// Providers resolve the node class's selectors.
type Providers struct {
	Subnets              *subnet.Provider
	SecurityGroups       *securitygroup.Provider
	AMIs                 *ami.Provider
	InstanceProfiles     *instanceprofile.Provider
	CapacityReservations *capacityreservation.Provider
}

// NewProviders builds the providers on SDK clients of cfg (its region is the profiles' region), asking
// version for the cluster's Kubernetes version (ami.ServerVersion reads it from the API server).
func NewProviders(cfg aws.Config, clk clock.PassiveClock, clusterName string, version ami.Version) Providers {
	ec2api, ssmapi, iamapi := ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg), iam.NewFromConfig(cfg)
	return Providers{
		Subnets:              subnet.NewProvider(ec2api, clk),
		SecurityGroups:       securitygroup.NewProvider(ec2api, clk),
		AMIs:                 ami.NewProvider(ec2api, ssmapi, version, clk),
		InstanceProfiles:     instanceprofile.NewProvider(iamapi, clk, cfg.Region, clusterName),
		CapacityReservations: capacityreservation.NewProvider(ec2api, clk),
	}
}

// Deps are the status controller's dependencies.
type Deps struct {
	// Client reads and patches EC2NodeClasses and lists NodeClaims. Required.
	Client client.Client
	// Clock stamps conditions and ages caches. Default the real clock.
	Clock clock.Clock
	// Recorder publishes the finalizer's events. Optional.
	Recorder  events.Recorder
	Providers Providers
	// ReservedCapacity is the feature gate: capacity reservations are resolved (and
	// CapacityReservationsReady counts toward Ready) only when it is on.
	ReservedCapacity bool
	// Validators run once every other condition is True (the launch side's dry-run authorization checks);
	// the first failure sets ValidationSucceeded False.
	Validators []Validator
	// Cleanups run in the finalizer after the instance profiles are deleted (the launch side deletes its
	// launch templates here). An error keeps the finalizer.
	Cleanups []func(context.Context, *awsv1.EC2NodeClass) error
}

// Validator checks a node class whose selectors resolved. It returns the condition reason and message of a
// failure ("CreateFleetAuthCheckFailed", "Controller isn't authorized to call ec2:CreateFleet"), or an empty
// reason when the class passes; an error means it could not tell. It caches its own answers.
type Validator func(context.Context, *awsv1.EC2NodeClass) (reason, message string, err error)

// Controller resolves EC2NodeClasses into their status.
type Controller struct {
	Deps
	// recreation remembers the profile just created per role and node class for a minute, so that a status
	// patch that fails does not make the next pass create another.
	recreation *ttlcache.Cache[string, string]
}

// NewController returns the EC2NodeClass status controller.
func NewController(deps Deps) *Controller {
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	return &Controller{Deps: deps, recreation: ttlcache.New[string, string](deps.Clock, time.Minute)}
}

// Name is "nodeclass.aws".
func (c *Controller) Name() string { return "nodeclass.aws" }

// Register watches EC2NodeClasses, and NodeClaim deletions so a finalizer waiting on them moves on.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&awsv1.EC2NodeClass{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			ref := o.(*v1.NodeClaim).Spec.NodeClassRef
			if ref == nil || ref.Group != awsv1.Group {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ref.Name}}}
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(c)
}

// Reconcile finalizes a deleted node class, or resolves one and patches its status when it changed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.Client.Get(ctx, req.NamespacedName, nodeClass); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("EC2NodeClass", klog.KObj(nodeClass)))
	if !nodeClass.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nodeClass)
	}
	if err := c.addFinalizer(ctx, nodeClass); err != nil {
		return conflictRequeue(err)
	}
	stored := nodeClass.DeepCopy()
	requeue, resolveErr := c.resolve(ctx, nodeClass)
	if !equality.Semantic.DeepEqual(stored.Status, nodeClass.Status) {
		if err := c.Client.Status().Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, errors.Join(resolveErr, client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass status, %w", err)))
		}
	}
	if resolveErr != nil {
		return reconcile.Result{}, resolveErr
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

func (c *Controller) addFinalizer(ctx context.Context, nodeClass *awsv1.EC2NodeClass) error {
	if controllerutil.ContainsFinalizer(nodeClass, TerminationFinalizer) {
		return nil
	}
	stored := nodeClass.DeepCopy()
	controllerutil.AddFinalizer(nodeClass, TerminationFinalizer)
	if err := c.Client.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding the finalizer, %w", err)
	}
	return nil
}

// conflictRequeue retries a conflicting write at once and returns other errors.
func conflictRequeue(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil
	}
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// step resolves one part of the status; it returns when to look again (0: no need).
type step func(context.Context, *awsv1.EC2NodeClass) (time.Duration, error)

// resolve runs every step, then ValidationSucceeded and Ready over their conditions. It returns the
// shortest requeue the steps asked for and their errors.
func (c *Controller) resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (time.Duration, error) {
	steps := []step{c.resolveAMIs, c.resolveSubnets, c.resolveSecurityGroups, c.resolveInstanceProfile}
	if c.ReservedCapacity {
		steps = append(steps, c.resolveCapacityReservations)
	}
	var (
		requeue time.Duration
		errs    []error
	)
	for _, s := range append(steps, c.validate) {
		after, err := s(ctx, nodeClass)
		errs = append(errs, err)
		if after > 0 && (requeue == 0 || after < requeue) {
			requeue = after
		}
	}
	c.setReady(nodeClass)
	return requeue, errors.Join(errs...)
}
