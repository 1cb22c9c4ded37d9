package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("VM_MEMORY_OVERHEAD_PERCENT", func() {
	// c6a.large has 4096 MiB: the hypervisor keeps ceil(4096 × 0.1) = 410 MiB instead of the catalog's
	// 308 MiB (7.5 %), so pods get 102 MiB less than the catalog's 3114 MiB.
	It("takes the hypervisor's share off each type's memory", func(ctx SpecContext) {
		_, provider := newProvider(func(d *sim.Deps) { d.VMMemoryOverheadPercent = ptr.To(0.1) })
		its, err := provider.GetInstanceTypes(ctx, &v1.NodePool{})
		Expect(err).NotTo(HaveOccurred())
		for _, it := range its {
			if it.Name == "c6a.large" {
				memory := it.Allocatable()["memory"]
				Expect(memory.Value()).To(BeEquivalentTo((3114 - 102) << 20))
				return
			}
		}
		Fail("no c6a.large")
	})
})
