// Package expect holds the Gomega helpers the integration suites share: removing objects whatever their
// finalizers, checking whether an object still exists, and reading a counter from a Prometheus registry.
package expect

import (
	"context"

	. "github.com/onsi/gomega" //nolint:revive // Gomega's DSL reads as intended only dot-imported.
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Released removes the object's finalizers and deletes it; an object already gone is fine.
func Released(ctx context.Context, c client.Client, obj client.Object) {
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		Expect(client.IgnoreNotFound(c.Update(ctx, obj))).To(Succeed())
	}
	Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(Succeed())
}

// NoMachines releases every NodeClaim and Node, so that a spec starts from an empty cluster.
func NoMachines(ctx context.Context, c client.Client) {
	nodeClaims := &v1.NodeClaimList{}
	Expect(c.List(ctx, nodeClaims)).To(Succeed())
	for i := range nodeClaims.Items {
		Released(ctx, c, &nodeClaims.Items[i])
	}
	nodes := &corev1.NodeList{}
	Expect(c.List(ctx, nodes)).To(Succeed())
	for i := range nodes.Items {
		Released(ctx, c, &nodes.Items[i])
	}
}

// Exists refreshes obj and reports whether it still exists.
func Exists(ctx context.Context, c client.Client, obj client.Object) bool {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// CounterValue sums the series of the counter that carry every one of the labels.
func CounterValue(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			if hasLabels(m.GetLabel(), labels) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func hasLabels(pairs []*dto.LabelPair, want map[string]string) bool {
	found := 0
	for _, p := range pairs {
		if v, ok := want[p.GetName()]; ok && v == p.GetValue() {
			found++
		}
	}
	return found == len(want)
}
