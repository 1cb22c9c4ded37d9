package v1

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// AllowedDisruptionsByReason returns how many of the pool's numNodes nodes may be disrupted at once for the
// reason at now: the smallest value among the budgets that apply to the reason (no reasons means every
// reason) and are active, or math.MaxInt32 when none is. A budget that cannot be read (bad schedule or
// nodes value) counts as allowing nothing, and its error is returned with the result, so that a broken
// budget blocks disruption rather than lifting a limit the user meant to set.
func (in *NodePool) AllowedDisruptionsByReason(now time.Time, numNodes int, reason DisruptionReason) (int, error) {
	allowed := math.MaxInt32
	var errs []error
	for i := range in.Spec.Disruption.Budgets {
		budget := &in.Spec.Disruption.Budgets[i]
		value, err := budget.AllowedDisruptions(now, numNodes)
		if err != nil {
			errs = append(errs, fmt.Errorf("budget %d, %w", i, err))
		}
		if len(budget.Reasons) == 0 || slices.Contains(budget.Reasons, reason) {
			allowed = min(allowed, value)
		}
	}
	return allowed, errors.Join(errs...)
}

// AllowedDisruptions returns how many of numNodes nodes the budget lets be disrupted at now: its nodes
// value (a count, or a percentage of numNodes rounded up) while it is active, math.MaxInt32 while it is not,
// and 0 with an error when it cannot be read.
func (in *Budget) AllowedDisruptions(now time.Time, numNodes int) (int, error) {
	active, err := in.IsActive(now)
	if err != nil {
		return 0, err
	}
	if !active {
		return math.MaxInt32, nil
	}
	value := intstr.FromString(in.Nodes)
	if n, err := strconv.Atoi(in.Nodes); err == nil {
		value = intstr.FromInt32(int32(n))
	}
	allowed, err := intstr.GetScaledValueFromIntOrPercent(&value, numNodes, true)
	if err != nil {
		return 0, fmt.Errorf("reading nodes %q, %w", in.Nodes, err)
	}
	return allowed, nil
}

// IsActive reports whether the budget applies at now: always when it has no schedule, else when a
// schedule hit (read in UTC) falls within the last duration.
func (in *Budget) IsActive(now time.Time) (bool, error) {
	if in.Schedule == nil && in.Duration == nil {
		return true, nil
	}
	if in.Schedule == nil || in.Duration == nil {
		return false, fmt.Errorf("schedule and duration must be set together")
	}
	schedule, err := cron.ParseStandard("TZ=UTC " + *in.Schedule)
	if err != nil {
		return false, fmt.Errorf("parsing schedule %q, %w", *in.Schedule, err)
	}
	now = now.UTC()
	next := schedule.Next(now.Add(-in.Duration.Duration))
	return !next.After(now), nil
}
