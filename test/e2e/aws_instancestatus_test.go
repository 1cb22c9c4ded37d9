package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// TestAWSImpairedInstanceReplacesTheNode runs Lathe with CLOUD_PROVIDER=aws and no interruption queue
// against the fake AWS: an instance whose system status check has been failing for minutes is found by the
// minutely DescribeInstanceStatus poll, its NodeClaim deleted and its pod run on a new node. The pod is
// protected by a PodDisruptionBudget with maxUnavailable 0 and the pool has no terminationGracePeriod: a
// failing status check drains forcefully all the same (the termination timestamp it sets is the deadline).
func TestAWSImpairedInstanceReplacesTheNode(t *testing.T) {
	ctx := context.Background()
	fake, err := localcluster.StartFakeAWS(s.cluster, localcluster.FakeAWSOptions{ClusterName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	defer runLatheOnFakeAWS(t, fake)()
	if _, err := s.applier.Apply(ctx, []byte(awsPool), nil); err != nil {
		t.Fatal(err)
	}
	defer deletePool(t)

	ns := namespace(t, "impaired-aws")
	defer cleanUp(t, ns) // while the aws Lathe still runs
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "impaired-aws"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &intstr.IntOrString{IntVal: 0},
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "impaired-aws"}},
		},
	}
	if err := s.kubeClient.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	deployment(t, ns, "impaired-aws", 1, "1", func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "aws"}
	})
	pods := runningPods(t, ns, "impaired-aws", 1, 3*time.Minute)
	victim := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: pods[0].Spec.NodeName}, victim); err != nil {
		t.Fatal(err)
	}
	claim := claimOf(t, "aws", victim.Name)
	instanceID := victim.Spec.ProviderID[strings.LastIndex(victim.Spec.ProviderID, "/")+1:]
	if !fake.SetInstanceHealth(instanceID, fakeaws.InstanceHealth{SystemStatus: fakeaws.StatusImpaired, ImpairedSince: time.Now().Add(-5 * time.Minute)}) {
		t.Fatalf("no instance %s in the fake", instanceID)
	}

	// The poll runs every minute; allow two.
	eventually(t, 2*time.Minute+30*time.Second, "the impaired instance's nodeclaim to be gone", func(ctx context.Context) (bool, error) {
		err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(claim), &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	eventually(t, 2*time.Minute, "the pod running on another node", func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": "impaired-aws"}); err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != victim.Name && p.DeletionTimestamp.IsZero() {
				return true, nil
			}
		}
		return false, nil
	})

	// The budget would hold the replacement's graceful drain below.
	if err := s.kubeClient.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	if err := s.kubeClient.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every instance to be terminated", func(context.Context) (bool, error) {
		return len(liveInstances(fake)) == 0, nil
	})
}
