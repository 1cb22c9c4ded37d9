// Package status exports the status condition and termination metrics awslabs/operatorpkg's status
// controller emits for Karpenter (operator_{nodeclaim,node,nodepool,ec2nodeclass}_status_condition_*,
// operator_*_termination_*, and for NodeClaims, NodePools and EC2NodeClasses the deprecated kind-less
// operator_status_condition_* and operator_termination_*). One controller per kind watches its objects and
// remembers the conditions it saw last, so transitions are observed best effort, as upstream's are.
package status

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// refresh is how often an object's current_status_seconds and termination time are brought up to date.
const refresh = 10 * time.Second

// Kind describes the objects one controller measures.
type Kind[T client.Object] struct {
	// Name is the lower-case kind in the metric names, e.g. "nodeclaim".
	Name string
	// Group and Kind label the deprecated metrics; empty Kind means the kind emits none (Nodes).
	Group, Kind string
	// Labels are object label keys added to the metrics, e.g. karpenter.sh/nodepool.
	Labels []string
	// Buckets of the transition and termination histograms.
	Buckets []float64
	// New returns an empty object; Conditions reads its conditions.
	New        func() T
	Conditions func(T) []metav1.Condition
}

// Deps are the controller's dependencies.
type Deps struct {
	Client     client.Client
	Clock      clock.Clock
	Registerer prometheus.Registerer
}

// series is one set of collectors with how an object fills its extra labels.
type series struct {
	*collectors
	values  func(client.Object) []string
	written *written // the label values of each object's gauges, so they are deleted exactly
}

// written remembers, per object, the label values of the gauges last set for it. Deleting those exactly
// keeps an update O(the object's conditions); a partial-match delete scans every series of the metric, so
// with thousands of NodeClaims and Nodes each update cost thousands of comparisons.
type written struct {
	mu  sync.Mutex
	set map[types.NamespacedName]gauges
}

// gauges are the label values of one object's condition gauges and of its termination gauge (nil if none).
type gauges struct {
	conditions  [][]string
	terminating []string
}

func (w *written) swap(key types.NamespacedName, next *gauges) gauges {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.set[key]
	if next == nil {
		delete(w.set, key)
	} else {
		w.set[key] = *next
	}
	return prev
}

// observed is what the controller saw of an object last.
type observed struct {
	conditions  []metav1.Condition
	terminating client.Object
}

// Controller measures the status conditions of one kind of object.
type Controller[T client.Object] struct {
	kind   Kind[T]
	client client.Client
	clock  clock.Clock
	series []series

	mu   sync.Mutex
	seen map[types.NamespacedName]observed
}

// NewController returns the status metrics controller of kind.
func NewController[T client.Object](deps Deps, kind Kind[T]) *Controller[T] {
	labels := make([]string, len(kind.Labels))
	for i, l := range kind.Labels {
		labels[i] = prometheusLabel(l)
	}
	c := &Controller[T]{kind: kind, client: deps.Client, clock: deps.Clock, seen: map[types.NamespacedName]observed{}}
	c.series = append(c.series, series{
		collectors: newCollectors(deps.Registerer, kind.Name, kind.Buckets, labels),
		written:    &written{set: map[types.NamespacedName]gauges{}},
		values: func(o client.Object) []string {
			out := make([]string, len(kind.Labels))
			for i, l := range kind.Labels {
				out[i] = o.GetLabels()[l]
			}
			return out
		},
	})
	if kind.Kind != "" {
		c.series = append(c.series, series{
			collectors: newCollectors(deps.Registerer, "", prometheus.DefBuckets, []string{groupLabel, kindLabel}),
			values:     func(client.Object) []string { return []string{kind.Group, kind.Kind} },
			written:    &written{set: map[types.NamespacedName]gauges{}},
		})
	}
	return c
}

// Name identifies the controller.
func (c *Controller[T]) Name() string { return "metrics.status." + c.kind.Name }

// Register watches the kind.
func (c *Controller[T]) Register(_ context.Context, mgr manager.Manager) error {
	if err := builder.ControllerManagedBy(mgr).Named(c.Name()).For(c.kind.New()).Complete(c); err != nil {
		return fmt.Errorf("building controller %s, %w", c.Name(), err)
	}
	return nil
}

// Reconcile brings the object's series up to date and records what changed since it was seen last.
func (c *Controller[T]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := c.kind.New()
	if err := c.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.gone(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	conditions := c.kind.Conditions(obj)
	before := c.remember(req.NamespacedName, obj, conditions)
	now := c.clock.Now()
	for _, s := range c.series {
		s.update(req.NamespacedName, obj, conditions, before, now)
	}
	return reconcile.Result{RequeueAfter: refresh}, nil
}

// remember stores the object's conditions and returns the ones seen before.
func (c *Controller[T]) remember(key types.NamespacedName, obj client.Object, conditions []metav1.Condition) []metav1.Condition {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.seen[key]
	next := observed{conditions: conditions}
	if obj.GetDeletionTimestamp() != nil {
		next.terminating = obj
	}
	c.seen[key] = next
	return before.conditions
}

// gone drops a deleted object's gauges and observes its termination, if it was seen terminating.
func (c *Controller[T]) gone(key types.NamespacedName) {
	c.mu.Lock()
	last := c.seen[key]
	delete(c.seen, key)
	c.mu.Unlock()
	for _, s := range c.series {
		s.forget(key)
		if last.terminating != nil {
			s.termination.WithLabelValues(s.values(last.terminating)...).
				Observe(c.clock.Since(last.terminating.GetDeletionTimestamp().Time).Seconds())
		}
	}
}

// forget deletes the object's gauges.
func (s series) forget(key types.NamespacedName) {
	s.drop(s.written.swap(key, nil), gauges{})
}

// drop deletes the gauges of prev that next does not set again.
func (s series) drop(prev, next gauges) {
	for _, labels := range prev.conditions {
		if !slices.ContainsFunc(next.conditions, func(l []string) bool { return slices.Equal(l, labels) }) {
			s.count.DeleteLabelValues(labels...)
			s.currentStatus.DeleteLabelValues(labels...)
		}
	}
	if prev.terminating != nil && !slices.Equal(prev.terminating, next.terminating) {
		s.terminating.DeleteLabelValues(prev.terminating...)
	}
}

// update replaces the object's gauges and counts the transitions since before.
func (s series) update(key types.NamespacedName, obj client.Object, conditions, before []metav1.Condition, now time.Time) {
	extra := s.values(obj)
	var next gauges
	if deleted := obj.GetDeletionTimestamp(); deleted != nil {
		next.terminating = append([]string{key.Namespace, key.Name}, extra...)
		s.terminating.WithLabelValues(next.terminating...).Set(now.Sub(deleted.Time).Seconds())
	}
	for _, cond := range conditions {
		labels := append([]string{key.Namespace, key.Name, cond.Type, string(cond.Status), cond.Reason}, extra...)
		next.conditions = append(next.conditions, labels)
		s.count.WithLabelValues(labels...).Set(1)
		s.currentStatus.WithLabelValues(labels...).Set(now.Sub(cond.LastTransitionTime.Time).Seconds())
		old := find(before, cond.Type)
		if old != nil && old.Status == cond.Status {
			continue
		}
		s.transitions.WithLabelValues(append([]string{cond.Type, string(cond.Status), cond.Reason}, extra...)...).Inc()
		if old != nil {
			s.transitionSeconds.WithLabelValues(append([]string{old.Type, string(old.Status)}, extra...)...).
				Observe(cond.LastTransitionTime.Sub(old.LastTransitionTime.Time).Seconds())
		}
	}
	s.drop(s.written.swap(key, &next), next)
}

func find(conditions []metav1.Condition, typ string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == typ {
			return &conditions[i]
		}
	}
	return nil
}
