package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// TestAWSSpotInterruptionReplacesTheNode runs Lathe with CLOUD_PROVIDER=aws and INTERRUPTION_QUEUE against
// the fake AWS: a spot interruption warning raised into the queue for one of the pool's instances makes
// Lathe delete its NodeClaim and run the pods on a new node, terminating the instance itself before EC2
// would reclaim it two minutes after the warning.
func TestAWSSpotInterruptionReplacesTheNode(t *testing.T) {
	ctx := context.Background()
	fake, err := localcluster.StartFakeAWS(s.cluster, localcluster.FakeAWSOptions{ClusterName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	defer runLatheOnFakeAWS(t, fake)()
	spotPoolYAML := strings.Replace(awsPool, `values: ["on-demand"]`, `values: ["spot"]`, 1)
	if _, err := s.applier.Apply(ctx, []byte(spotPoolYAML), nil); err != nil {
		t.Fatal(err)
	}
	defer deletePool(t)

	ns := namespace(t, "spot-aws")
	defer cleanUp(t, ns) // while the aws Lathe still runs
	deployment(t, ns, "spot-aws", 2, "1", func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "aws"}
	})
	pods := runningPods(t, ns, "spot-aws", 2, 3*time.Minute)
	victim := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: pods[0].Spec.NodeName}, victim); err != nil {
		t.Fatal(err)
	}
	if victim.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeSpot {
		t.Fatalf("node %s is %q, want spot", victim.Name, victim.Labels[v1.CapacityTypeLabelKey])
	}
	claim := claimOf(t, "aws", victim.Name)
	instanceID := victim.Spec.ProviderID[strings.LastIndex(victim.Spec.ProviderID, "/")+1:]
	if err := fake.RaiseSpotInterruption(instanceID); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()

	deadline := fakeaws.SpotInterruptionNotice - 10*time.Second
	eventually(t, deadline, "the interrupted nodeclaim to be gone", func(ctx context.Context) (bool, error) {
		err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(claim), &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	eventually(t, deadline-time.Since(interrupted), "2 pods running on other nodes", func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": "spot-aws"}); err != nil {
			return false, err
		}
		moved := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != victim.Name && p.DeletionTimestamp.IsZero() {
				moved++
			}
		}
		return moved == 2, nil
	})
	t.Logf("pods moved %s after the warning", time.Since(interrupted).Round(time.Second))
	for _, in := range fake.Instances() {
		if in.ID == instanceID && (in.State != fakeaws.StateTerminated || in.StateReason != fakeaws.ReasonUserInitiated) {
			t.Errorf("interrupted instance %s is %s (%s), want terminated by Lathe before EC2 reclaimed it", in.ID, in.State, in.StateReason)
		}
	}
	eventually(t, 30*time.Second, "the warning to be deleted from the queue", func(context.Context) (bool, error) {
		return len(fake.QueueMessages("e2e")) == 0, nil
	})

	if err := s.kubeClient.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every instance to be terminated", func(context.Context) (bool, error) {
		return len(liveInstances(fake)) == 0, nil
	})
}
