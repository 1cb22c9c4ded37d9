package consolidatable_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/expect"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestConsolidatable(t *testing.T) { suite.Run(t, "NodeClaim Consolidatable") }

var _ = suite.WithEnvironment(&env)

// Every spec starts without NodeClaims or NodePools.
var _ = AfterEach(func(ctx context.Context) {
	expect.NoMachines(ctx, env.Client)
	Expect(env.Client.DeleteAllOf(ctx, &v1.NodePool{})).To(Succeed())
})
