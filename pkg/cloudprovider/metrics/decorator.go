// Package metrics measures every call through the CloudProvider interface, as upstream Karpenter's
// decorator does: karpenter_cloudprovider_duration_seconds and karpenter_cloudprovider_errors_total by
// controller, method and provider, and the instance type gauges (cpu cores, memory, offering availability
// and price) from what GetInstanceTypes returns.
//
// The composition root wraps the provider once per controller (Decorate), so the controller label names
// the caller without reading it from the context.
package metrics

import (
	"context"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// Values of the error label: the typed errors of the CloudProvider contract, or "" for any other error.
const (
	ErrorNodeClaimNotFound    = "NodeClaimNotFoundError"
	ErrorNodeClassNotReady    = "NodeClassNotReadyError"
	ErrorInsufficientCapacity = "InsufficientCapacityError"
)

// decorator is a CloudProvider that measures the calls it passes on.
type decorator struct {
	cloudprovider.CloudProvider
	controller string
	metrics    *Collectors
}

var _ cloudprovider.CloudProvider = (*decorator)(nil)

// Decorate returns cloud measured as the named controller's calls, on the collectors m.
func Decorate(cloud cloudprovider.CloudProvider, controller string, m *Collectors) cloudprovider.CloudProvider {
	return &decorator{CloudProvider: cloud, controller: controller, metrics: m}
}

func (d *decorator) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	defer d.measure("Create", time.Now())
	out, err := d.CloudProvider.Create(ctx, nodeClaim)
	d.failed("Create", err)
	return out, err
}

func (d *decorator) Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	defer d.measure("Delete", time.Now())
	err := d.CloudProvider.Delete(ctx, nodeClaim)
	d.failed("Delete", err)
	return err
}

func (d *decorator) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	defer d.measure("Get", time.Now())
	out, err := d.CloudProvider.Get(ctx, providerID)
	d.failed("Get", err)
	return out, err
}

func (d *decorator) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	defer d.measure("List", time.Now())
	out, err := d.CloudProvider.List(ctx)
	d.failed("List", err)
	return out, err
}

func (d *decorator) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	defer d.measure("GetInstanceTypes", time.Now())
	out, err := d.CloudProvider.GetInstanceTypes(ctx, nodePool)
	d.failed("GetInstanceTypes", err)
	if err == nil {
		d.metrics.instanceTypes(out)
	}
	return out, err
}

func (d *decorator) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	defer d.measure("IsDrifted", time.Now())
	out, err := d.CloudProvider.IsDrifted(ctx, nodeClaim)
	d.failed("IsDrifted", err)
	return out, err
}

// measure observes the duration of a call that started at start. Durations are wall-clock time, as the
// provider's calls are real network calls whatever clock the controllers use.
func (d *decorator) measure(method string, start time.Time) {
	d.metrics.duration.WithLabelValues(d.controller, method, d.Name()).Observe(time.Since(start).Seconds())
}

func (d *decorator) failed(method string, err error) {
	if err == nil {
		return
	}
	d.metrics.errors.WithLabelValues(d.controller, method, d.Name(), ErrorLabel(err)).Inc()
}

// ErrorLabel is the error label value of err.
func ErrorLabel(err error) string {
	switch {
	case cloudprovider.IsInsufficientCapacityError(err):
		return ErrorInsufficientCapacity
	case cloudprovider.IsNodeClaimNotFoundError(err):
		return ErrorNodeClaimNotFound
	case cloudprovider.IsNodeClassNotReadyError(err):
		return ErrorNodeClassNotReady
	}
	return ""
}
