package disruption_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
)

// The lifecycle controller and the disruption loop both count karpenter_nodeclaims_disrupted_total; the
// composition root registers both on one registry, which must not panic.
func TestDisruptedCounterSharedWithLifecycle(t *testing.T) {
	reg := prometheus.NewRegistry()
	lifecycle.NewController(lifecycle.Deps{Clock: clock.RealClock{}, Registerer: reg})
	disruption.NewController(disruption.Deps{Clock: clock.RealClock{}, Registerer: reg})
}
