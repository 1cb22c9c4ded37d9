package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// awsPool is the tutorial's NodePool and EC2NodeClass (tag-selected subnets and security groups,
// al2023@latest) under the name aws, so that its pods and nodes are told apart from the default pool's.
const awsPool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: aws
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: aws
  limits:
    cpu: 1000
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
`

// awsPoolNoSubnets is a pool whose EC2NodeClass selects subnets that don't exist.
const awsPoolNoSubnets = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: aws-nosubnets
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: aws-nosubnets
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: aws-nosubnets
spec:
  role: "KarpenterNodeRole-e2e"
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "nowhere"
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "e2e"
  amiSelectorTerms:
    - alias: al2023@latest
`

// TestAWSProviderAgainstFakeAWS runs Lathe with CLOUD_PROVIDER=aws against the fake AWS (in place of the
// suite's simulated provider): the EC2NodeClass becomes Ready, inflate 0→5 runs on nodes booted from
// instances CreateFleet launched with the expected tags and launch template, deleting the deployment and
// NodeClaims terminates them, and a leaked instance is garbage collected.
func TestAWSProviderAgainstFakeAWS(t *testing.T) {
	ctx := context.Background()
	fake, err := localcluster.StartFakeAWS(s.cluster, localcluster.FakeAWSOptions{ClusterName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	leaked := fake.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: "us-east-1a", LaunchTime: time.Now().Add(-5 * time.Minute),
		Tags: map[string]string{"kubernetes.io/cluster/e2e": "owned", "karpenter.sh/nodepool": "aws"}})

	lathe, stop := startLatheOnFakeAWS(t, fake)
	defer stop()

	if _, err := s.applier.Apply(ctx, []byte(awsPool), nil); err != nil {
		t.Fatal(err)
	}
	defer deletePool(t)
	eventually(t, 2*time.Minute, "the aws EC2NodeClass to be Ready", func(ctx context.Context) (bool, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: "aws"}, nc); err != nil {
			return false, err
		}
		for _, c := range nc.Status.Conditions {
			if c.Type == awsv1.ConditionTypeReady {
				return c.Status == "True", nil
			}
		}
		return false, nil
	})

	ns := namespace(t, "inflate-aws")
	defer cleanUp(t, ns) // while the aws Lathe still runs
	deployment(t, ns, "inflate", 5, "1", func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "aws"}
	})
	runningPods(t, ns, "inflate", 5, 3*time.Minute)
	claims := readyNodeClaims(t)
	live := liveInstances(fake)
	if len(live) != len(claims) {
		t.Fatalf("%d live instances for %d NodeClaims", len(live), len(claims))
	}
	for _, c := range claims {
		i := slices.IndexFunc(live, func(in fakeaws.Instance) bool { return c.Status.ProviderID == "aws:///"+in.Zone+"/"+in.ID })
		if i < 0 {
			t.Fatalf("nodeclaim %s has provider ID %s, which no fake instance has", c.Name, c.Status.ProviderID)
		}
		in := live[i]
		for k, want := range map[string]string{"karpenter.sh/nodepool": "aws", "karpenter.sh/nodeclaim": c.Name, "karpenter.k8s.aws/ec2nodeclass": "aws",
			"kubernetes.io/cluster/e2e": "owned", "eks:eks-cluster-name": "e2e"} {
			if in.Tags[k] != want {
				t.Errorf("instance %s tag %s = %q, want %q", in.ID, k, in.Tags[k], want)
			}
		}
		if in.MetadataHTTPTokens != "required" || in.MetadataHopLimit != 1 || in.ImageID != fake.AMD64AMIID || c.Labels[v1.LabelInstanceType] != in.InstanceType {
			t.Errorf("instance %+v launched for nodeclaim with labels %v", in, c.Labels)
		}
	}
	if fake.Faults().Calls("ec2", "CreateFleet") == 0 {
		t.Error("no CreateFleet call")
	}
	batchesServed(t, lathe.MetricsPort)
	if slices.ContainsFunc(liveInstances(fake), func(in fakeaws.Instance) bool { return in.ID == leaked.ID }) {
		t.Error("the leaked instance was not garbage collected")
	}

	// The fake enforces Karpenter's controller policy: nothing Lathe did so far was refused.
	if denied := fake.PolicyDenials(); len(denied) > 0 {
		t.Errorf("calls Karpenter's controller policy refuses: %q", denied)
	}

	noSubnets(t, fake)

	if err := s.kubeClient.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every instance to be terminated", func(context.Context) (bool, error) {
		return len(liveInstances(fake)) == 0, nil
	})
}

func liveInstances(fake *localcluster.FakeAWS) []fakeaws.Instance {
	return slices.DeleteFunc(fake.Instances(), func(in fakeaws.Instance) bool { return in.State == fakeaws.StateTerminated })
}

// deletePool deletes the aws NodePool and EC2NodeClass and waits until they are gone.
func deletePool(t *testing.T) {
	ctx := context.Background()
	_ = s.kubeClient.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "aws"}})
	_ = s.kubeClient.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "aws"}})
	eventually(t, time.Minute, "the aws EC2NodeClass to be gone", func(ctx context.Context) (bool, error) {
		err := s.kubeClient.Get(ctx, client.ObjectKey{Name: "aws"}, &awsv1.EC2NodeClass{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// noSubnets checks a pool whose node class's subnets match nothing: the class says which selector matched
// nothing, its pods stay pending and nothing is launched for it.
func noSubnets(t *testing.T, fake *localcluster.FakeAWS) {
	ctx := context.Background()
	if _, err := s.applier.Apply(ctx, []byte(awsPoolNoSubnets), nil); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = s.kubeClient.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "aws-nosubnets"}})
		_ = s.kubeClient.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "aws-nosubnets"}})
	}()
	eventually(t, time.Minute, "the aws-nosubnets EC2NodeClass to name its subnet selector", func(ctx context.Context) (bool, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: "aws-nosubnets"}, nc); err != nil {
			return false, err
		}
		for _, c := range nc.Status.Conditions {
			if c.Type == awsv1.ConditionTypeSubnetsReady && c.Status == "False" && strings.Contains(c.Message, "karpenter.sh/discovery=nowhere") {
				return true, nil
			}
		}
		return false, nil
	})
	ns := namespace(t, "inflate-nosubnets")
	// Only this namespace's pods: the caller's inflate still runs on its NodeClaims, and deleting those (as
	// cleanUp does) would race Lathe relaunching them for the caller's pods.
	defer deleteWorkloads(ns)
	deployment(t, ns, "stuck", 1, "1", func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "aws-nosubnets"}
	})
	eventually(t, time.Minute, "a FailedScheduling event on the stuck pod", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) == 0 {
			return false, err
		}
		evs, err := events(ctx, ns, "Pod", pods.Items[0].Name, "FailedScheduling")
		return len(evs) > 0 && pods.Items[0].Status.Phase == corev1.PodPending, err
	})
	for _, in := range fake.Instances() {
		if in.Tags["karpenter.sh/nodepool"] == "aws-nosubnets" {
			t.Errorf("instance %s launched for the pool without subnets", in.ID)
		}
	}
}

// restoreSimLathe starts the suite's simulated-provider lathe again and waits until the tutorial pool is
// Ready once more: the AWS provider's EC2NodeClass controller resolved the suite's "default" class against
// the fake AWS meanwhile (as one Lathe manages every class), and a test that provisions straight after must
// not see the pool not ready.
func restoreSimLathe(t *testing.T) {
	t.Helper()
	restartLathe(t)
	eventually(t, 2*time.Minute, "the default NodePool to be Ready again", func(ctx context.Context) (bool, error) {
		pool := &v1.NodePool{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: "default"}, pool); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionTypeReady), nil
	})
}

// runLatheOnFakeAWS replaces the suite's Lathe with one running the AWS provider against the fake, and returns
// what stops it and brings the simulated provider's Lathe back.
func runLatheOnFakeAWS(t *testing.T, fake *localcluster.FakeAWS) func() {
	t.Helper()
	_, stop := startLatheOnFakeAWS(t, fake)
	return stop
}

// startLatheOnFakeAWS is runLatheOnFakeAWS, also returning the running Lathe (for its metrics port).
func startLatheOnFakeAWS(t *testing.T, fake *localcluster.FakeAWS) (*localcluster.Lathe, func()) {
	t.Helper()
	if err := s.lathe.Stop(); err != nil {
		t.Fatal(err)
	}
	lathe, err := localcluster.StartLathe(context.Background(), localcluster.LatheOptions{
		Binary: s.latheBin, Kubeconfig: s.cluster.Kubeconfig(), ClusterName: "e2e", Logs: s.logs,
		Env: append([]string{"BATCH_IDLE_DURATION=1s", "BATCH_MAX_DURATION=10s"}, fake.LatheEnv...),
	})
	if err != nil {
		restoreSimLathe(t)
		t.Fatal(err)
	}
	return lathe, func() {
		_ = lathe.Stop()
		restoreSimLathe(t)
	}
}

// batchesServed checks that the AWS provider's Lathe serves the CreateFleet batcher's histograms, with
// upstream's batcher label.
func batchesServed(t *testing.T, metricsPort int) {
	t.Helper()
	text, err := scrapePort(metricsPort)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"karpenter_cloudprovider_batcher_batch_size", "karpenter_cloudprovider_batcher_batch_time_seconds"} {
		f, ok := families[name]
		if !ok {
			t.Errorf("the aws Lathe does not serve %s", name)
			continue
		}
		if labels := labelNames(f); labels != "batcher" || f.GetMetric()[0].GetLabel()[0].GetValue() != "create_fleet" ||
			f.GetMetric()[0].GetHistogram().GetSampleCount() == 0 {
			t.Errorf("%s: labels %s, series %v; want batcher=create_fleet with samples", name, labels, f.GetMetric())
		}
	}
}
