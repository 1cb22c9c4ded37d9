package state_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// BenchmarkNominations asks for every live nomination in a cluster of 1,000 Nodes with their NodeClaims and
// 1,000 more NodeClaims in flight, 2,000 pods nominated across them: the nomination controller asks on every
// Node and NodeClaim event, so it must not copy the cluster.
func BenchmarkNominations(b *testing.B) {
	clk := clocktesting.NewFakeClock(metav1.Now().Time)
	c := state.NewCluster(state.Deps{Clock: clk, Registerer: prometheus.NewRegistry()})
	for i := range 2000 {
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%d", i), Labels: map[string]string{v1.NodePoolLabelKey: "default"}}}
		if i < 1000 {
			claim.Status.ProviderID = fmt.Sprintf("sim:///node-%d", i)
			c.Nodes.UpdateNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i),
				Labels: map[string]string{v1.NodePoolLabelKey: "default", corev1.LabelHostname: fmt.Sprintf("node-%d", i)}},
				Spec: corev1.NodeSpec{ProviderID: claim.Status.ProviderID}})
		}
		c.Nodes.UpdateNodeClaim(claim)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: "u"}}
		c.Nominate(pod, state.Target{NodeClaim: claim.Name})
	}
	if got := len(c.Nominations()); got != 2000 {
		b.Fatalf("%d live nominations, want 2000", got)
	}
	b.ResetTimer()
	for range b.N {
		c.Nominations()
	}
}
