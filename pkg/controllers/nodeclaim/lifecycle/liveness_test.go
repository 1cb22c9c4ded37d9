package lifecycle_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
)

var _ = Describe("Liveness", func() {
	liveness := map[string]string{"reason": lifecycle.DisruptedReasonLiveness, "nodepool": "default"}

	It("requeues with the exact time left until the registration timeout", func() {
		nc := newNodeClaim()
		clk.SetTime(nc.CreationTimestamp.Add(2*time.Minute + 30*time.Second))
		res := expectReconciled(nc)
		Expect(res.RequeueAfter).To(Equal(12*time.Minute + 30*time.Second))
		clk.SetTime(nc.CreationTimestamp.Add(lifecycle.RegistrationTimeout - time.Second))
		Expect(expectReconciled(nc).RequeueAfter).To(Equal(time.Second))
		Expect(get(nc).DeletionTimestamp.IsZero()).To(BeTrue())
	})
	It("deletes a claim not registered within 15 minutes", func() {
		nc := launched()
		clk.SetTime(nc.CreationTimestamp.Add(lifecycle.RegistrationTimeout))
		Expect(expectReconciled(nc).RequeueAfter).To(BeZero())
		expectDeleting(nc)
		Expect(counter("karpenter_nodeclaims_disrupted_total", liveness)).To(Equal(1.0))
	})
	It("doesn't delete a registered claim", func() {
		nc := launched()
		newNode(nc)
		expectReconciled(nc)
		clk.SetTime(nc.CreationTimestamp.Add(time.Hour))
		Expect(expectReconciled(nc).RequeueAfter).To(BeZero())
		Expect(get(nc).DeletionTimestamp.IsZero()).To(BeTrue())
	})
	It("keeps a claim whose launch fails within 5 minutes", func() {
		nc := newNodeClaim()
		clk.SetTime(nc.CreationTimestamp.Add(lifecycle.LaunchTimeout - time.Second))
		cp.InjectError(fake.MethodCreate, errors.New("throttled"))
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(HaveOccurred())
		Expect(get(nc).DeletionTimestamp.IsZero()).To(BeTrue())
	})
	It("deletes a claim not launched within 5 minutes", func() {
		nc := newNodeClaim()
		clk.SetTime(nc.CreationTimestamp.Add(lifecycle.LaunchTimeout))
		cp.InjectError(fake.MethodCreate, errors.New("throttled"))
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(MatchError(ContainSubstring("throttled")))
		expectDeleting(nc)
		Expect(counter("karpenter_nodeclaims_disrupted_total", liveness)).To(Equal(1.0))
		Expect(get(nc).Finalizers).To(ContainElement(v1.TerminationFinalizer))
	})
})
