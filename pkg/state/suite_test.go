package state_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

// env is the API server the specs run against; it is started once because starting it costs seconds.
var env *environment.Environment

func TestState(t *testing.T) { suite.Run(t, "State") }

var _ = suite.WithEnvironment(&env)

// cleanUp deletes every object the specs create, so each spec's Synced check sees only its own objects.
func cleanUp(ctx context.Context) {
	// The API server never sees a kubelet here, so bound pods are deleted at once rather than gracefully.
	Expect(env.Client.DeleteAllOf(ctx, podObject(), inDefault(), zeroGrace())).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, daemonSetObject(), inDefault())).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, pdbObject(), inDefault())).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, nodeClaimObject())).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, nodeObject())).To(Succeed())
}
