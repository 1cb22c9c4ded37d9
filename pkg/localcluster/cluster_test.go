package localcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
)

// waitTimeout bounds each wait for the cluster to reach a state; it is not a performance target.
const waitTimeout = 2 * time.Minute

// TestClusters starts two clusters at once and checks that each works on its own: kwok makes fake nodes
// Ready, the scheduler places a Deployment's pod, kwok runs it, the CRDs install and the tutorial NodePool
// applies. Then it stops both and checks no process is left.
func TestClusters(t *testing.T) {
	bin := binDir(t)
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	clusters := make([]*localcluster.Cluster, 2)
	logs := make([]*lockedBuffer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range clusters {
		logs[i] = &lockedBuffer{}
		wg.Go(func() {
			clusters[i], errs[i] = localcluster.Start(ctx, localcluster.Options{
				BinDir:         bin,
				WorkDir:        work,
				KubeconfigPath: filepath.Join(work, "kubeconfig-"+string(rune('a'+i))),
				Logs:           logs[i],
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Start() of cluster %d error = %v", i, err)
		}
	}
	stopped := false
	stopAll := func() {
		if stopped {
			return
		}
		stopped = true
		for i, c := range clusters {
			if c == nil {
				continue
			}
			if err := c.Stop(); err != nil {
				t.Errorf("Stop() of cluster %d error = %v", i, err)
			}
		}
	}
	t.Cleanup(func() {
		stopAll()
		if t.Failed() {
			for i, l := range logs {
				t.Logf("cluster %d component output:\n%s", i, tailOf(l.String(), 80))
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	a, b := clusters[0], clusters[1]
	if a.RESTConfig().Host == b.RESTConfig().Host {
		t.Fatalf("both clusters serve on %s", a.RESTConfig().Host)
	}

	t.Run("kubeconfig file works", func(t *testing.T) { checkKubeconfig(t, a) })
	t.Run("kwok makes a fake node ready", func(t *testing.T) { createReadyNode(ctx, t, a, "fake-a") })
	t.Run("kwok keeps the fake node's lease", func(t *testing.T) { checkNodeLease(ctx, t, a, "fake-a") })
	t.Run("scheduled pods run on the fake node", func(t *testing.T) { checkDeploymentRuns(ctx, t, a, "fake-a") })
	t.Run("CRDs install and the tutorial NodePool applies", func(t *testing.T) { checkTutorialNodePool(ctx, t, a) })
	t.Run("the second cluster is separate", func(t *testing.T) {
		createReadyNode(ctx, t, b, "fake-b")
		var nodes corev1.NodeList
		if err := newClient(t, a).List(ctx, &nodes); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			if n.Name == "fake-b" {
				t.Error("the node created in the second cluster shows up in the first")
			}
		}
	})

	select {
	case <-a.Failed():
		t.Errorf("a component of the first cluster failed: %v", a.Err())
	case <-b.Failed():
		t.Errorf("a component of the second cluster failed: %v", b.Err())
	default:
	}

	t.Run("Stop leaves nothing behind", func(t *testing.T) {
		stopAll()
		for _, c := range clusters {
			if len(c.Processes()) != len(localcluster.Binaries()) {
				t.Errorf("cluster ran %d processes, want %d", len(c.Processes()), len(localcluster.Binaries()))
			}
			for _, p := range c.Processes() {
				assertGone(t, p.Name(), p.PID())
			}
			if err := c.Err(); err != nil {
				t.Errorf("Err() after Stop = %v, want nil", err)
			}
			if _, err := os.Stat(c.DataDir()); !os.IsNotExist(err) {
				t.Errorf("data folder %s still there after Stop (stat error %v)", c.DataDir(), err)
			}
			if _, err := os.Stat(c.Kubeconfig()); !os.IsNotExist(err) {
				t.Errorf("kubeconfig %s still there after Stop (stat error %v)", c.Kubeconfig(), err)
			}
		}
		if left := processesMentioning(t, work); len(left) > 0 {
			t.Errorf("processes still running with the work folder in their command line:\n%s", strings.Join(left, "\n"))
		}
	})
}

func newClient(t *testing.T, c *localcluster.Cluster) client.Client {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.RESTConfig(), client.Options{Scheme: s})
	if err != nil {
		t.Fatalf("creating client, %v", err)
	}
	return cl
}

func checkKubeconfig(t *testing.T, c *localcluster.Cluster) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		t.Fatalf("loading %s, %v", c.Kubeconfig(), err)
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ns corev1.Namespace
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "kube-system"}, &ns); err != nil {
		t.Errorf("reading namespace kube-system with the kubeconfig, %v", err)
	}
}

// createReadyNode creates a Node that kwok manages and waits until it is Ready.
func createReadyNode(ctx context.Context, t *testing.T, c *localcluster.Cluster, name string) {
	cl := newClient(t, c)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{localcluster.FakeNodeAnnotation: localcluster.FakeNodeAnnotationValue},
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if err := cl.Create(ctx, node); err != nil {
		t.Fatalf("creating node, %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for node %s to become Ready, %v; status: %+v", name, err, node.Status)
	}
}

// checkNodeLease waits for the Node's Lease in kube-node-lease to be held (by kwok) and renewed, as a
// kubelet keeps it: without one the node lifecycle controller marks the Node unreachable once its last
// status is older than the grace period.
func checkNodeLease(ctx context.Context, t *testing.T, c *localcluster.Cluster, node string) {
	cl := newClient(t, c)
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node}
	var first *metav1.MicroTime
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, key, lease); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		renewed := lease.Spec.RenewTime
		if renewed == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return false, nil
		}
		if first == nil {
			first = renewed.DeepCopy()
		}
		return renewed.After(first.Time), nil
	})
	if err != nil {
		t.Fatalf("waiting for node %s's lease to be held and renewed, %v; lease: %+v", node, err, lease.Spec)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 40 {
		t.Errorf("lease duration = %v, want 40 s (the kubelet's default)", d)
	}
}

// checkDeploymentRuns creates a Deployment and waits for its pod to be bound to node and Running: the
// controller manager makes the ReplicaSet and pod, the scheduler binds it and kwok runs it.
func checkDeploymentRuns(ctx context.Context, t *testing.T, c *localcluster.Cluster, node string) {
	cl := newClient(t, c)
	labels := map[string]string{"app": "inflate"}
	replicas := int32(1)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "inflate", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:      "inflate",
					Image:     "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				}}},
			},
		},
	}
	if err := cl.Create(ctx, deploy); err != nil {
		t.Fatalf("creating deployment, %v", err)
	}
	var pods corev1.PodList
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := cl.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		return len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("waiting for the deployment's pod to run, %v; pods: %+v", err, pods.Items)
	}
	if got := pods.Items[0].Spec.NodeName; got != node {
		t.Errorf("pod runs on node %q, want %q", got, node)
	}
	var events corev1.EventList
	if err := cl.List(ctx, &events, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	scheduled := false
	for _, e := range events.Items {
		scheduled = scheduled || (e.Reason == "Scheduled" && e.InvolvedObject.Name == pods.Items[0].Name)
	}
	if !scheduled {
		t.Error("no Scheduled event for the pod: it was not placed by kube-scheduler")
	}
}

func checkTutorialNodePool(ctx context.Context, t *testing.T, c *localcluster.Cluster) {
	applier, err := localcluster.NewApplier(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := applier.InstallCRDs(ctx); err != nil {
		t.Fatalf("InstallCRDs() error = %v", err)
	}
	manifest, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "tutorial-nodepool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"CLUSTER_NAME": "lathe-local", "AMD_AMI_ID": "ami-0123456789abcdef0"}
	applied, err := applier.Apply(ctx, manifest, vars)
	if err != nil {
		t.Fatalf("Apply() error = %v", err)
	}
	if len(applied) != 2 {
		t.Fatalf("Apply() applied %d objects, want 2", len(applied))
	}
	// Applying again is a no-op, not a conflict.
	if _, err := applier.Apply(ctx, manifest, vars); err != nil {
		t.Fatalf("second Apply() error = %v", err)
	}

	cl := newClient(t, c)
	nodePool := &unstructured.Unstructured{}
	nodePool.SetAPIVersion("karpenter.sh/v1")
	nodePool.SetKind("NodePool")
	if err := cl.Get(ctx, client.ObjectKey{Name: "default"}, nodePool); err != nil {
		t.Fatalf("reading NodePool default, %v", err)
	}
	nodeClass := &unstructured.Unstructured{}
	nodeClass.SetAPIVersion("karpenter.k8s.aws/v1")
	nodeClass.SetKind("EC2NodeClass")
	if err := cl.Get(ctx, client.ObjectKey{Name: "default"}, nodeClass); err != nil {
		t.Fatalf("reading EC2NodeClass default, %v", err)
	}
	// `kubectl apply` of the same manifest later merges cleanly: the objects carry its annotation.
	for _, obj := range []*unstructured.Unstructured{nodePool, nodeClass} {
		if last := obj.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; !strings.Contains(last, `"kind":"`+obj.GetKind()+`"`) {
			t.Errorf("%s has last-applied-configuration %q", obj.GetKind(), last)
		}
	}
	if role, _, _ := unstructured.NestedString(nodeClass.Object, "spec", "role"); role != "KarpenterNodeRole-lathe-local" {
		t.Errorf("EC2NodeClass role = %q, want the substituted KarpenterNodeRole-lathe-local", role)
	}
	terms, _, _ := unstructured.NestedSlice(nodeClass.Object, "spec", "amiSelectorTerms")
	if len(terms) != 1 || terms[0].(map[string]any)["id"] != "ami-0123456789abcdef0" {
		t.Errorf("EC2NodeClass amiSelectorTerms = %v, want the substituted AMI id", terms)
	}
}

func tailOf(s string, lines int) string {
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
