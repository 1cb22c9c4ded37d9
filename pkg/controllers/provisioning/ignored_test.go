package provisioning_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
)

// TestProvisionIgnoresPodsKarpenterIgnores: a pod that avoids Lathe's nodes and a pod pinned to a hostname
// are left alone as Karpenter leaves them (no NodeClaim, not planned), the second with a FailedScheduling
// event that says why and the first with none, and karpenter_scheduler_ignored_pods_count counts both.
func TestProvisionIgnoresPodsKarpenterIgnores(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	reg := prometheus.NewRegistry()
	rec := &eventsfake.Recorder{}
	p := provisioning.NewProvisioner(provisioning.Deps{
		Client: cachedClient, Cluster: cluster, CloudProvider: fake.New(catalog.KarpenterBenchmark()[:64]...),
		Clock: clocktesting.NewFakeClock(time.Now()), Recorder: rec, Registerer: reg,
	})
	createPool(t, "default", nil)
	createPendingPod(t, "controller", "1", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpDoesNotExist}}}}}}}
	})
	createPendingPod(t, "pinned", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-1"} })
	createPendingPod(t, "web", "1", nil)
	plan := provision(t, p, 3)

	placed := len(plan.Placements)
	for _, c := range plan.NodeClaims {
		placed += len(c.Pods)
	}
	if len(plan.Unschedulable) != 0 || placed != 1 {
		t.Errorf("plan placed %d pods and left %d unschedulable, want only web placed", placed, len(plan.Unschedulable))
	}
	if n := len(listClaims(t)); n != 1 {
		t.Errorf("%d nodeclaims, want 1 (for web)", n)
	}
	failed := rec.WithReason("FailedScheduling")
	if len(failed) != 1 || !strings.Contains(failed[0].Message, "ignoring pod") || !strings.Contains(failed[0].Message, "kubernetes.io/hostname") {
		var messages []string
		for _, e := range failed {
			messages = append(messages, e.Message)
		}
		t.Fatalf("FailedScheduling events %q, want one that ignores the pod for its hostname label", messages)
	}
	if got := failed[0].InvolvedObject.(*corev1.Pod).Name; got != "pinned" {
		t.Errorf("the FailedScheduling event is on %s, want pinned", got)
	}
	want := "# HELP karpenter_scheduler_ignored_pods_count x\n# TYPE karpenter_scheduler_ignored_pods_count gauge\nkarpenter_scheduler_ignored_pods_count 2\n"
	if err := testutil.GatherAndCompare(helpless{reg}, strings.NewReader(want), "karpenter_scheduler_ignored_pods_count"); err != nil {
		t.Error(err)
	}
}

// helpless gathers with every help text replaced, so a comparison looks at values only.
type helpless struct{ prometheus.Gatherer }

func (h helpless) Gather() ([]*dto.MetricFamily, error) {
	families, err := h.Gatherer.Gather()
	for _, f := range families {
		f.Help = proto.String("x")
	}
	return families, err
}
