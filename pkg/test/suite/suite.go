// Package suite is the frame every Ginkgo suite of Lathe's that runs against a real API server shares: one
// etcd and kube-apiserver per test binary, started before the first spec and stopped after the last;
// library logs sent to the Ginkgo report (shown for failed specs); and Eventually waits long enough for a
// loaded machine running every package at once.
package suite

import (
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// EventuallyTimeout replaces Gomega's default of one second, which a loaded machine overruns.
const EventuallyTimeout = 30 * time.Second

// Run runs the calling package's specs under the description.
func Run(t *testing.T, description string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(EventuallyTimeout)
	ginkgo.RunSpecs(t, description)
}

// WithEnvironment declares the suite's BeforeSuite, which starts the API server into *env and then runs
// setUp, and its AfterSuite, which stops it. Call it once, from a package-level declaration:
//
//	var _ = suite.WithEnvironment(&env)
func WithEnvironment(env **environment.Environment, setUp ...func(ginkgo.SpecContext)) bool {
	ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
		ctrllog.SetLogger(ginkgo.GinkgoLogr)
		klog.SetLogger(ginkgo.GinkgoLogr)
		started, err := environment.Start()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		*env = started
		for _, f := range setUp {
			f(ctx)
		}
	})
	ginkgo.AfterSuite(func() {
		if *env != nil {
			gomega.Expect((*env).Stop()).To(gomega.Succeed())
		}
	})
	return true
}
