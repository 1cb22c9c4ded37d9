package static

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

func staticPool(replicas int64, nodeLimit string) *v1.NodePool {
	p := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "static"}, Spec: v1.NodePoolSpec{Replicas: ptr.To(replicas)}}
	if nodeLimit != "" {
		p.Spec.Limits = v1.Limits{v1.ResourceNodes: resource.MustParse(nodeLimit)}
	}
	return p
}

func claim(name, providerID string, mutate ...func(*v1.NodeClaim)) v1.NodeClaim {
	c := v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeClaimStatus{ProviderID: providerID}}
	for _, m := range mutate {
		m(&c)
	}
	return c
}

func deleting(c *v1.NodeClaim) { c.DeletionTimestamp = &metav1.Time{} }
func replaced(c *v1.NodeClaim) {
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue})
}

func TestToLaunch(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pool   *v1.NodePool
		claims []v1.NodeClaim
		want   int
	}{
		{"none yet", staticPool(3, ""), nil, 3},
		{"deleting ones are replaced", staticPool(2, ""), []v1.NodeClaim{claim("a", "p-a"), claim("b", "p-b", deleting)}, 1},
		{"one being replaced still counts", staticPool(2, ""), []v1.NodeClaim{claim("a", "p-a", replaced), claim("b", "p-b")}, 0},
		{"limits.nodes counts deleting claims", staticPool(3, "3"), []v1.NodeClaim{claim("a", "p-a"), claim("b", "p-b", deleting)}, 1},
		{"too many", staticPool(1, ""), []v1.NodeClaim{claim("a", "p-a"), claim("b", "p-b")}, 0},
	} {
		if got := toLaunch(tt.pool, countClaims(tt.claims)); got != tt.want {
			t.Errorf("%s: toLaunch = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// Scale-down removes claims that never launched first, then the cheapest to disrupt; a node with a
// do-not-disrupt pod goes last; claims being replaced don't count.
func TestToRemove(t *testing.T) {
	pods := map[string][]*corev1.Pod{
		"busy":      {pod("p1", nil), pod("p2", nil)},
		"light":     {pod("p3", nil)},
		"protected": {pod("p4", map[string]string{v1.DoNotDisruptAnnotationKey: "true"})},
	}
	podsOf := func(c *v1.NodeClaim) []*corev1.Pod { return pods[c.Name] }
	claims := []v1.NodeClaim{claim("busy", "p-busy"), claim("protected", "p-protected"), claim("light", "p-light"),
		claim("empty", "p-empty"), claim("unlaunched", ""), claim("replaced", "p-r", replaced)}
	got := names(toRemove(staticPool(1, ""), countClaims(claims), podsOf))
	want := []string{"unlaunched", "empty", "light", "busy"}
	if len(got) != len(want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("removed %v, want %v", got, want)
		}
	}
	if got := toRemove(staticPool(5, ""), countClaims(claims), podsOf); len(got) != 0 {
		t.Errorf("with 5 wanted of 5 counted: removed %v", names(got))
	}
}

func pod(name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func names(claims []*v1.NodeClaim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.Name)
	}
	return out
}
