package nomination_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/pod/nomination"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// launched is what lifecycle.Launches tells: the provider IDs of the NodeClaims this process launched.
type launched map[string]string

func (l launched) ProviderIDOf(nodeClaim string) string { return l[nodeClaim] }

func (l launched) NodeClaimOf(providerID string) string {
	for claim, id := range l {
		if id == providerID {
			return claim
		}
	}
	return ""
}

// The cache has the NodeClaim without the provider ID its launch returned (its status update has not
// arrived yet) while the Node is there: the launch's provider ID finds the Node, and the Node's event brings
// the pods nominated to the claim.
func TestNodeOfAClaimWhoseStatusTheCacheLacks(t *testing.T) {
	ctx := context.Background()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	builder := fake.NewClientBuilder().WithScheme(s)
	for _, index := range fieldindex.Indexes() {
		builder = builder.WithIndex(index.Object, index.Field, index.Extract)
	}
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-abc"}, Spec: corev1.NodeSpec{ProviderID: "sim:///node-abc"}}
	kube := builder.WithObjects(claim, node).Build()
	pod := types.NamespacedName{Namespace: "default", Name: "p"}
	noms := nominations{pod: state.Nomination{Pod: pod, Target: state.Target{NodeClaim: claim.Name}}}

	for _, c := range []struct {
		name     string
		launches nomination.ProviderIDs
		want     string
	}{
		{"without the launch", nil, ""},
		{"launched by this process", launched{claim.Name: node.Spec.ProviderID}, node.Name},
	} {
		ctrl := nomination.NewController(nomination.Deps{Client: kube, Nominations: noms, Clock: clocktesting.NewFakeClock(time.Now()), Launches: c.launches})
		got, err := ctrl.NodeOfClaim(ctx, claim.Name)
		if err != nil || got != c.want {
			t.Errorf("%s: node of the claim %q, %v; want %q", c.name, got, err, c.want)
		}
		requests := ctrl.PodsNominatedTo(ctx, node)
		if brought := len(requests) == 1 && requests[0] == (reconcile.Request{NamespacedName: pod}); brought != (c.want != "") {
			t.Errorf("%s: the Node's event brings %v", c.name, requests)
		}
	}
}
