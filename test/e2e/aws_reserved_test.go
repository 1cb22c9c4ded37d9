package e2e_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// awsReservedPool is a pool of m5.large that may be reserved or on-demand, whose EC2NodeClass selects the
// capacity reservations tagged for the test.
const awsReservedPool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: aws
spec:
  template:
    spec:
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["m5.large"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["reserved", "on-demand"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: aws
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: aws
spec:
  role: "KarpenterNodeRole-e2e"
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "e2e"
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "e2e"
  amiSelectorTerms:
    - alias: al2023@latest
  capacityReservationSelectorTerms:
    - tags:
        purpose: "e2e-reserved"
`

// TestAWSLaunchesIntoACapacityReservation runs Lathe with the AWS provider against the fake AWS with a
// two-slot reservation of m5.large: three pods that each need a node of their own get two nodes in the
// reservation (capacity type reserved, the reservation's labels, instances reporting it) and one on-demand.
func TestAWSLaunchesIntoACapacityReservation(t *testing.T) {
	ctx := context.Background()
	fake, err := localcluster.StartFakeAWS(s.cluster, localcluster.FakeAWSOptions{ClusterName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cr := fake.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Available: 2,
		InstanceMatchCriteria: "targeted", Tags: map[string]string{"purpose": "e2e-reserved"}})

	defer runLatheOnFakeAWS(t, fake)()

	if _, err := s.applier.Apply(ctx, []byte(awsReservedPool), nil); err != nil {
		t.Fatal(err)
	}
	defer deletePool(t)
	eventually(t, 2*time.Minute, "the aws EC2NodeClass to be Ready with the reservation", func(ctx context.Context) (bool, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: "aws"}, nc); err != nil {
			return false, err
		}
		ready := false
		for _, c := range nc.Status.Conditions {
			ready = ready || c.Type == awsv1.ConditionTypeReady && c.Status == "True"
		}
		return ready && len(nc.Status.CapacityReservations) == 1, nil
	})

	ns := namespace(t, "inflate-reserved")
	defer cleanUp(t, ns)
	deployment(t, ns, "inflate", 3, "1500m", func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "aws"}
	})
	runningPods(t, ns, "inflate", 3, 3*time.Minute)
	claims := readyNodeClaims(t)
	byType := map[string]int{}
	for _, c := range claims {
		ct := c.Labels[v1.CapacityTypeLabelKey]
		byType[ct]++
		if ct == v1.CapacityTypeReserved && (c.Labels[awsv1.LabelCapacityReservationID] != cr.ID || c.Labels[awsv1.LabelCapacityReservationType] != "default") {
			t.Errorf("reserved nodeclaim %s labels %v, want reservation %s", c.Name, c.Labels, cr.ID)
		}
		node := &corev1.Node{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		if node.Labels[v1.CapacityTypeLabelKey] != ct || node.Labels[awsv1.LabelCapacityReservationID] != c.Labels[awsv1.LabelCapacityReservationID] {
			t.Errorf("node %s labels %v, nodeclaim's %v", node.Name, node.Labels, c.Labels)
		}
	}
	if byType[v1.CapacityTypeReserved] != 2 || byType[v1.CapacityTypeOnDemand] != 1 {
		t.Fatalf("nodeclaims by capacity type %v, want 2 reserved and 1 on-demand", byType)
	}
	inReservation := 0
	for _, in := range liveInstances(fake) {
		if in.CapacityReservationID == cr.ID {
			inReservation++
		}
	}
	if got, _ := fake.CapacityReservation(cr.ID); inReservation != 2 || got.Available != 0 {
		t.Fatalf("%d instances in the reservation with %d slots left, want 2 and 0", inReservation, got.Available)
	}

	if err := s.kubeClient.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every instance to be terminated", func(context.Context) (bool, error) {
		return len(liveInstances(fake)) == 0, nil
	})
	if got, _ := fake.CapacityReservation(cr.ID); got.Available != 2 {
		t.Errorf("the reservation has %d slots after termination, want 2", got.Available)
	}
}

// TestAWSReservedNodeIsDemotedWhenItsReservationEnds runs Lathe with the AWS provider against the fake AWS:
// a pod lands on a node in a one-slot reservation, then the reservation expires and EC2 keeps the instance
// running on-demand (DescribeInstances no longer names the reservation). Within the minutely
// capacityreservation.capacitytype pass the node's NodeClaim and Node say karpenter.sh/capacity-type
// on-demand without the reservation labels, and the node keeps running its pod.
func TestAWSReservedNodeIsDemotedWhenItsReservationEnds(t *testing.T) {
	ctx := context.Background()
	fake, err := localcluster.StartFakeAWS(s.cluster, localcluster.FakeAWSOptions{ClusterName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cr := fake.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 1,
		InstanceMatchCriteria: "targeted", Tags: map[string]string{"purpose": "e2e-reserved"}})

	defer runLatheOnFakeAWS(t, fake)()

	if _, err := s.applier.Apply(ctx, []byte(awsReservedPool), nil); err != nil {
		t.Fatal(err)
	}
	defer deletePool(t)

	ns := namespace(t, "demoted-reserved")
	defer cleanUp(t, ns)
	deployment(t, ns, "demoted", 1, "1500m", func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "aws"}
	})
	pod := runningPods(t, ns, "demoted", 1, 3*time.Minute)[0]
	claim := claimOf(t, "aws", pod.Spec.NodeName)
	if claim.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeReserved || claim.Labels[awsv1.LabelCapacityReservationID] != cr.ID {
		t.Fatalf("nodeclaim %s labels %v, want reserved in %s", claim.Name, claim.Labels, cr.ID)
	}

	moved, err := fake.EndCapacityReservation(cr.ID, "expired")
	if err != nil || len(moved) != 1 {
		t.Fatalf("ending the reservation moved %v out of it (%v), want the node's instance", moved, err)
	}
	demoted := func(labels map[string]string) bool {
		return labels[v1.CapacityTypeLabelKey] == v1.CapacityTypeOnDemand && labels[awsv1.LabelCapacityReservationID] == "" &&
			labels[awsv1.LabelCapacityReservationType] == "" && labels[awsv1.LabelCapacityReservationInterruptible] == ""
	}
	// The controller runs every minute; allow two passes and the provider's instance cache.
	eventually(t, 3*time.Minute, "the nodeclaim and its node to be relabelled on-demand", func(ctx context.Context) (bool, error) {
		nc := &v1.NodeClaim{}
		if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(claim), nc); err != nil {
			return false, err
		}
		node := &corev1.Node{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
			return false, err
		}
		return demoted(nc.Labels) && demoted(node.Labels), nil
	})
	live := &corev1.Pod{}
	if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(&pod), live); err != nil || live.Spec.NodeName != pod.Spec.NodeName || live.DeletionTimestamp != nil {
		t.Errorf("the pod did not stay on its demoted node (%v)", err)
	}

	if err := s.kubeClient.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every instance to be terminated", func(context.Context) (bool, error) {
		return len(liveInstances(fake)) == 0, nil
	})
}
