package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// leaseNamespace is where the specs put the leader election Lease.
const leaseNamespace = "lathe-system"

var env *environment.Environment

func TestOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	// The default of one second is too short on a loaded machine running every package at once.
	SetDefaultEventuallyTimeout(30 * time.Second)
	RunSpecs(t, "Operator")
}

var _ = BeforeSuite(func() {
	// Library code that logs through the process-wide loggers goes to the Ginkgo report.
	ctrllog.SetLogger(GinkgoLogr)
	klog.SetLogger(GinkgoLogr)
	var err error
	env, err = environment.Start()
	Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}
	Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
