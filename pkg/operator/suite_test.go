package operator_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

// leaseNamespace is where the specs put the leader election Lease.
const leaseNamespace = "lathe-system"

var env *environment.Environment

func TestOperator(t *testing.T) { suite.Run(t, "Operator") }

var _ = suite.WithEnvironment(&env, func(ctx SpecContext) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}
	Expect(env.Client.Create(ctx, ns)).To(Succeed())
})
