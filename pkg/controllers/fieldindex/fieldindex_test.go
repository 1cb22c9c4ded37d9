package fieldindex_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
)

// countingIndexer records the indexes added to it.
type countingIndexer struct{ fields []string }

func (c *countingIndexer) IndexField(_ context.Context, _ client.Object, field string, _ client.IndexerFunc) error {
	c.fields = append(c.fields, field)
	return nil
}

func TestRegisterAddsEachIndexOncePerIndexer(t *testing.T) {
	ctx := context.Background()
	a, b := &countingIndexer{}, &countingIndexer{}
	for _, ix := range []*countingIndexer{a, a, b} {
		if err := fieldindex.Register(ctx, ix); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.fields) != len(fieldindex.Indexes()) || len(b.fields) != len(fieldindex.Indexes()) {
		t.Fatalf("indexes added: %v and %v, want each of %d once per indexer", a.fields, b.fields, len(fieldindex.Indexes()))
	}
}

func TestIndexesExtract(t *testing.T) {
	claim := &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: "aws:///z/i-1", NodeName: "n1"}}
	node := &corev1.Node{Spec: corev1.NodeSpec{ProviderID: "aws:///z/i-1"}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}
	va := &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{NodeName: "n1"}}
	for _, tc := range []struct {
		obj  client.Object
		want string
	}{{claim, "aws:///z/i-1"}, {claim, "n1"}, {node, "aws:///z/i-1"}, {pod, "n1"}, {va, "n1"}} {
		found := false
		for _, ix := range fieldindex.Indexes() {
			if fmt.Sprintf("%T", ix.Object) != fmt.Sprintf("%T", tc.obj) {
				continue
			}
			if got := ix.Extract(tc.obj); len(got) == 1 && got[0] == tc.want {
				found = true
			}
		}
		if !found {
			t.Errorf("no index finds %T by %q", tc.obj, tc.want)
		}
	}
	for _, ix := range fieldindex.Indexes() {
		if empty := ix.Extract(ix.Object); len(empty) != 0 {
			t.Errorf("%T %s of an empty object: %v, want none", ix.Object, ix.Field, empty)
		}
	}
}

func TestBelongsTo(t *testing.T) {
	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: id}}
	}
	claim := func(nodeName, id string) *v1.NodeClaim {
		return &v1.NodeClaim{Status: v1.NodeClaimStatus{NodeName: nodeName, ProviderID: id}}
	}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		claim *v1.NodeClaim
		want  bool
	}{
		{"same provider id", node("a", "p1"), claim("b", "p1"), true},
		{"different provider ids, same name", node("a", "p1"), claim("a", "p2"), false},
		{"node without provider id, claim's node name", node("a", ""), claim("a", "p1"), true},
		{"claim without provider id, claim's node name", node("a", "p1"), claim("a", ""), true},
		{"no provider ids, other name", node("a", ""), claim("b", ""), false},
		{"claim with nothing", node("a", ""), claim("", ""), false},
	} {
		if got := fieldindex.BelongsTo(tc.node, tc.claim); got != tc.want {
			t.Errorf("%s: BelongsTo = %v, want %v", tc.name, got, tc.want)
		}
	}
}
