package fieldpatch_test

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

var nodeFields = []fieldpatch.Field{
	fieldpatch.Keys("metadata", "labels"),
	fieldpatch.Keys("metadata", "annotations"),
	fieldpatch.Whole("metadata", "finalizers"),
	fieldpatch.Whole("spec", "taints"),
	fieldpatch.Unguarded("spec", "providerID"),
}

var unregistered = corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}

func baseNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7", Labels: map[string]string{"a": "1", "zone": "z1"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{unregistered}},
	}
}

// apply applies the patch from before to after onto stored, the API server's newest copy, with the JSON
// patch library the API server uses.
func apply(t *testing.T, before, after, stored *corev1.Node) (*corev1.Node, error) {
	t.Helper()
	return applyWith(t, before, after, stored, &corev1.Node{}, nodeFields...)
}

// applyWith applies the patch from before to after, covering fields, onto stored and decodes the result
// into out.
func applyWith[T any](t *testing.T, before, after, stored, out T, fields ...fieldpatch.Field) (T, error) {
	t.Helper()
	ops, err := fieldpatch.Operations(before, after, fields...)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	doc, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := p.Apply(doc)
	if err != nil {
		var zero T
		return zero, err
	}
	return out, json.Unmarshal(patched, out)
}

func TestKeepsWhatOthersChangedMeanwhile(t *testing.T) {
	before := baseNode()
	after := before.DeepCopy()
	after.Labels["karpenter.sh/registered"] = "true"
	after.Spec.Taints = []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoSchedule}}
	after.Finalizers = []string{"karpenter.sh/termination"}
	after.Spec.ProviderID = "kwok://n"

	stored := before.DeepCopy()
	stored.ResourceVersion = "9"
	stored.Labels["heartbeat"] = "2"
	stored.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
	stored.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}

	got, err := apply(t, before, after, stored)
	if err != nil {
		t.Fatalf("a patch whose fields nobody else changed failed: %v", err)
	}
	want := map[string]string{"a": "1", "zone": "z1", "heartbeat": "2", "karpenter.sh/registered": "true"}
	if !maps.Equal(got.Labels, want) {
		t.Errorf("labels %v, want %v", got.Labels, want)
	}
	if got.Annotations["node.alpha.kubernetes.io/ttl"] != "0" || len(got.Status.Conditions) != 1 {
		t.Errorf("lost another writer's change: annotations %v, conditions %v", got.Annotations, got.Status.Conditions)
	}
	if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule || got.Spec.ProviderID != "kwok://n" ||
		len(got.Finalizers) != 1 {
		t.Errorf("the patch's own changes are missing: %+v %v", got.Spec, got.Finalizers)
	}
}

func TestFailsWhenAReplacedValueChangedMeanwhile(t *testing.T) {
	for name, meanwhile := range map[string]func(*corev1.Node){
		"a taint added": func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "x", Effect: "NoSchedule"})
		},
		"the same label changed": func(n *corev1.Node) { n.Labels["zone"] = "z2" },
		"a finalizer added":      func(n *corev1.Node) { n.Finalizers = []string{"other"} },
	} {
		t.Run(name, func(t *testing.T) {
			before := baseNode()
			after := before.DeepCopy()
			after.Labels["zone"] = "z3"
			after.Spec.Taints = nil
			after.Finalizers = []string{"karpenter.sh/termination"}
			stored := before.DeepCopy()
			meanwhile(stored)
			if _, err := apply(t, before, after, stored); !errors.Is(err, jsonpatch.ErrTestFailed) {
				t.Fatalf("got %v, want a failed test", err)
			}
		})
	}
}

func TestAddsAnAbsentMapAndParent(t *testing.T) {
	before := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	after := before.DeepCopy()
	after.Labels = map[string]string{"a/b~c": "1"}
	after.Annotations = map[string]string{"x": "y"}
	got, err := apply(t, before, after, before.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["a/b~c"] != "1" || got.Annotations["x"] != "y" {
		t.Errorf("got labels %v annotations %v", got.Labels, got.Annotations)
	}
	stored := before.DeepCopy()
	stored.Labels = map[string]string{"other": "1"}
	if _, err := apply(t, before, after, stored); err == nil {
		t.Error("replaced a label map another writer created meanwhile")
	}
}

func TestRemovesAnEntryAndAWholeValue(t *testing.T) {
	before := baseNode()
	after := before.DeepCopy()
	delete(after.Labels, "a")
	after.Spec.Taints = nil
	got, err := apply(t, before, after, before.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Labels["a"]; ok || len(got.Spec.Taints) != 0 || got.Labels["zone"] != "z1" {
		t.Errorf("got labels %v taints %v", got.Labels, got.Spec.Taints)
	}
}

func TestRefusesAChangeOutsideItsFields(t *testing.T) {
	before := baseNode()
	after := before.DeepCopy()
	after.Spec.Unschedulable = true
	if _, err := fieldpatch.Operations(before, after, nodeFields...); err == nil {
		t.Error("a change outside the fields was left out silently")
	}
	after = before.DeepCopy()
	after.ResourceVersion = "8"
	if ops, err := fieldpatch.Operations(before, after, nodeFields...); err != nil || len(ops) != 0 {
		t.Errorf("a new resource version alone gave %v, %v; want no operations", ops, err)
	}
}

// applyNodeClaim applies the patch from before to after, covering fields, onto stored.
func applyNodeClaim(t *testing.T, before, after, stored *v1.NodeClaim, fields ...fieldpatch.Field) (*v1.NodeClaim, error) {
	t.Helper()
	return applyWith(t, before, after, stored, &v1.NodeClaim{}, fields...)
}

func TestFailsWhenAValueReadChangedMeanwhile(t *testing.T) {
	fields := []fieldpatch.Field{fieldpatch.Whole("status", "conditions"), fieldpatch.Read("status", "lastPodEventTime")}
	for name, lastPodEvent := range map[string]metav1.Time{"set": metav1.NewTime(time.Unix(1000, 0)), "absent": {}} {
		t.Run(name, func(t *testing.T) {
			before := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: v1.NodeClaimStatus{
				ProviderID: "kwok://c", LastPodEventTime: lastPodEvent,
			}}
			after := before.DeepCopy()
			after.Status.Conditions = []metav1.Condition{{Type: "Consolidatable", Status: metav1.ConditionTrue}}

			got, err := applyNodeClaim(t, before, after, before.DeepCopy(), fields...)
			if err != nil || len(got.Status.Conditions) != 1 {
				t.Fatalf("a patch whose value read is unchanged: %v, %+v", err, got)
			}
			stored := before.DeepCopy()
			stored.Status.LastPodEventTime = metav1.NewTime(time.Unix(2000, 0))
			if _, err := applyNodeClaim(t, before, after, stored, fields...); !errors.Is(err, jsonpatch.ErrTestFailed) {
				t.Fatalf("the value read changed meanwhile: got %v, want a failed test", err)
			}
		})
	}
}

func TestAValueReadIsNeitherWrittenNorTestedAlone(t *testing.T) {
	fields := []fieldpatch.Field{fieldpatch.Whole("status", "conditions"), fieldpatch.Read("status", "lastPodEventTime")}
	before := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	if ops, err := fieldpatch.Operations(before, before.DeepCopy(), fields...); err != nil || len(ops) != 0 {
		t.Errorf("nothing changed: got %v, %v; want no operations", ops, err)
	}
	after := before.DeepCopy()
	after.Status.LastPodEventTime = metav1.NewTime(time.Unix(1000, 0))
	if _, err := fieldpatch.Operations(before, after, fields...); err == nil {
		t.Error("a change to a value read was left out silently")
	}
}
