package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// namespace creates a namespace for one test; the test's cleanup removes its workloads and every NodeClaim.
func namespace(t testing.TB, name string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := s.kubeClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanUp(t, name) })
	return name
}

// cleanUp deletes the namespace's deployments and pods, then every NodeClaim, and waits until no
// NodeClaim and no Lathe node is left, so the next test starts from an empty cluster.
func cleanUp(t testing.TB, ns string) {
	t.Helper()
	ctx := context.Background()
	deleteWorkloads(ns)
	if err := s.kubeClient.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Errorf("deleting nodeclaims: %v", err)
	}
	eventually(t, 3*time.Minute, "every nodeclaim and lathe node to be gone", func(ctx context.Context) (bool, error) {
		var claims v1.NodeClaimList
		var nodes corev1.NodeList
		if err := s.kubeClient.List(ctx, &claims); err != nil {
			return false, err
		}
		if err := s.kubeClient.List(ctx, &nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
			return false, err
		}
		return len(claims.Items) == 0 && len(nodes.Items) == 0, nil
	})
}

// deleteWorkloads deletes the namespace's Deployments and Pods, leaving nodes to whoever needs them.
func deleteWorkloads(ns string) {
	ctx := context.Background()
	_ = s.kubeClient.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ns))
	_ = s.kubeClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
}

// deployment creates a Deployment of pause pods requesting cpu each.
func deployment(t testing.TB, ns, name string, replicas int32, cpu string, mutate func(*corev1.PodSpec)) {
	t.Helper()
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr(int64(0)),
		Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
	}
	if mutate != nil {
		mutate(&spec)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	if err := s.kubeClient.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// runningPods waits until want pods of the app run in the namespace, and returns them.
func runningPods(t testing.TB, ns, app string, want int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	eventually(t, timeout, fmt.Sprintf("%d running %s pods", want, app), func(ctx context.Context) (bool, error) {
		if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == want, nil
	})
	return pods.Items
}

// readyNodeClaims returns the NodeClaims, failing the test unless every one is Ready.
func readyNodeClaims(t testing.TB) []v1.NodeClaim {
	t.Helper()
	var claims v1.NodeClaimList
	eventually(t, time.Minute, "every nodeclaim to be ready", func(ctx context.Context) (bool, error) {
		if err := s.kubeClient.List(ctx, &claims); err != nil {
			return false, err
		}
		for _, c := range claims.Items {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionTypeReady) {
				return false, nil
			}
		}
		return len(claims.Items) > 0, nil
	})
	return claims.Items
}

// events returns the events with the reason about the object of the kind and name, in the namespace ("" for
// a cluster-scoped kind such as Node or NodeClaim).
func events(ctx context.Context, ns, kind, name, reason string) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
