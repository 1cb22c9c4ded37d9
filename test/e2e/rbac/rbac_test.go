// Package rbac_test checks the chart's RBAC against what Lathe really does: Lathe runs on a local cluster as
// the chart's ServiceAccount, with only the chart's ClusterRole and Role, while the API server writes an
// audit log; a scenario drives provisioning, nomination, consolidation, termination with eviction, NodePool
// status and leader election. No request may be denied, and every verb on every resource the chart grants
// must have been used (or be listed in unexercised or onRace with the reason).
package rbac_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/test/chart"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

const (
	// systemNamespace is the release namespace, and cluster the CLUSTER_NAME.
	systemNamespace = "lathe"
	cluster         = "rbac"
	// user is who Lathe runs as: the chart's ServiceAccount (release "lathe" names it "lathe").
	user = "system:serviceaccount:" + systemNamespace + ":lathe"
)

// auditPolicy logs the metadata of the ServiceAccount's requests only.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["` + user + `"]
- level: None
`

// pool is the tutorial NodePool and EC2NodeClass, consolidating at once, with a termination grace period
// after which Lathe deletes the pods a drain could not evict.
const pool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      terminationGracePeriod: 20s
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiFamily: AL2023
  role: KarpenterNodeRole-${CLUSTER_NAME}
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}}]
  amiSelectorTerms: [{id: "${AMD_AMI_ID}"}]
`

// unexercised are grants the scenario can't use on a local cluster, each with the reason; keep it short.
var unexercised = map[string]string{
	"patch core/events": "client-go's recorder patches the count of an Event Lathe publishes again after its own dedupe window (minutes); the scenario is shorter",
}

// onRace are grants used only when a race is lost, which one run may see and the next not, each with the race.
var onRace = map[string]string{
	"get core/nodes":              "Lathe reads a Node from the API server after a write from its cached copy lost an optimistic-lock race",
	"get karpenter.sh/nodeclaims": "Lathe reads a NodeClaim from the API server after a write from its cached copy lost an optimistic-lock race",
}

// covered reports whether a grant is used: directly, or for list, by a watch of the same resource, since
// client-go streams an informer's initial list in its watch (WatchListClient) on this API server and lists
// first on servers without it.
func covered(used map[string]bool, g string) bool {
	if rest, ok := strings.CutPrefix(g, "list "); ok {
		return used[g] || used["watch "+rest]
	}
	return used[g]
}

func TestChartRBACCoversLatheAndNothingMore(t *testing.T) {
	ctx := context.Background()
	logf.SetLogger(logr.Discard())
	work := t.TempDir()
	logs, err := os.Create(filepath.Join(work, "cluster.log"))
	if err != nil {
		t.Fatal(err)
	}
	policy, auditLog := filepath.Join(work, "audit-policy.yaml"), filepath.Join(work, "audit.log")
	defer func() {
		if t.Failed() {
			tail(t, logs.Name(), 150)
		}
		used, _, _ := readAudit(auditLog, user)
		t.Logf("used by %s:\n%s", user, strings.Join(sorted(used), "\n"))
	}()
	latheBin := buildLathe(t, work)
	binDir, err := environment.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, WorkDir: work, Logs: logs, AuditPolicyFile: policy, AuditLogPath: auditLog})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	applier, err := localcluster.NewApplier(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := applier.InstallCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(c.RESTConfig(), client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	fake, err := localcluster.StartFakeAWS(c, localcluster.FakeAWSOptions{ClusterName: cluster})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()

	rendered, err := chart.Render(chart.Dir("lathe"), chart.Options{Release: "lathe", Namespace: systemNamespace, Set: []string{"settings.clusterName=" + cluster}})
	if err != nil {
		t.Fatal(err)
	}
	create(t, kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}})
	var rbac []*unstructured.Unstructured
	for _, o := range rendered.Objects {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			rbac = append(rbac, o)
		}
	}
	apply(t, applier, rbac)
	kubeconfig := serviceAccountKubeconfig(t, c, work)

	lathe, err := localcluster.StartLathe(ctx, localcluster.LatheOptions{
		Binary: latheBin, Kubeconfig: kubeconfig, ClusterName: cluster, Logs: logs,
		Env: append(append(chartEnv(t, rendered.Objects), fake.LatheEnv...), "DISABLE_LEADER_ELECTION=false"),
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = lathe.Stop()
		}
	}()

	scenario(t, ctx, kube, applier, fake)

	if err := lathe.Stop(); err != nil {
		t.Fatalf("stopping lathe: %v", err)
	}
	stopped = true
	used, denied, err := readAudit(auditLog, user)
	if err != nil {
		t.Fatal(err)
	}
	for g, d := range denied {
		t.Errorf("denied %s: %s", g, d)
	}
	granted := grants(t, rbac)
	for g := range granted {
		if covered(used, g) {
			continue
		}
		if reason, ok := unexercised[g]; ok {
			t.Logf("granted, not exercised here: %s (%s)", g, reason)
			continue
		}
		if reason, ok := onRace[g]; ok {
			t.Logf("granted, no race lost this time: %s (%s)", g, reason)
			continue
		}
		t.Errorf("granted but never used: %s (remove it from the chart, or list it in unexercised with the reason)", g)
	}
	for g := range unexercised {
		if covered(used, g) || !granted[g] {
			t.Errorf("unexercised lists %s, which is used or not granted: drop it from the list", g)
		}
	}
	for g := range onRace {
		if !granted[g] {
			t.Errorf("onRace lists %s, which is not granted: drop it from the list", g)
		}
	}
	t.Logf("%d grants, %d used by %s", len(granted), len(used), user)
}

// scenario provisions nodes for a deployment (nominating its pods), terminates a NodeClaim with pods on
// it (evictions), then empties the nodes so consolidation deletes them.
func scenario(t *testing.T, ctx context.Context, kube client.Client, applier *localcluster.Applier, fake *localcluster.FakeAWS) {
	t.Helper()
	if _, err := applier.Apply(ctx, []byte(pool), map[string]string{"CLUSTER_NAME": cluster, "AMD_AMI_ID": fake.AMD64AMIID}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the EC2NodeClass to be Ready", func(ctx context.Context) (bool, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return false, err
		}
		for _, c := range nc.Status.Conditions {
			if c.Type == awsv1.ConditionTypeReady {
				return c.Status == metav1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	create(t, kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}})
	inflate := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "inflate", Namespace: "work"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inflate"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "inflate"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
				},
			},
		},
	}
	create(t, kube, inflate)
	// A do-not-disrupt pod is never evicted: termination deletes it when the grace period runs out.
	guarded := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "work", Labels: map[string]string{"app": "guarded"},
			Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: "true"}},
		Spec: *inflate.Spec.Template.Spec.DeepCopy(),
	}
	create(t, kube, guarded)
	t.Log("EC2NodeClass ready, inflate and guarded created")
	eventually(t, 3*time.Minute, "5 pods running", runningPods(kube, 5))

	claims := &v1.NodeClaimList{}
	if err := kube.List(ctx, claims); err != nil || len(claims.Items) == 0 {
		t.Fatalf("listing nodeclaims: %v (%d)", err, len(claims.Items))
	}
	t.Logf("deleting all %d nodeclaims", len(claims.Items))
	if err := kube.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the deleted nodeclaims to terminate", func(ctx context.Context) (bool, error) {
		for _, c := range claims.Items {
			err := kube.Get(ctx, client.ObjectKeyFromObject(&c), &v1.NodeClaim{})
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
			if err == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err := kube.Get(ctx, client.ObjectKeyFromObject(guarded), &corev1.Pod{}); client.IgnoreNotFound(err) != nil || err == nil {
		t.Fatalf("the guarded pod must be gone with its node: %v", err)
	}
	eventually(t, 3*time.Minute, "4 inflate pods running again", runningPods(kube, 4))

	t.Log("scaling inflate to 0")
	scale := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
	if err := kube.Patch(ctx, inflate, scale); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "consolidation to remove every node", func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		err := kube.List(ctx, list)
		return err == nil && len(list.Items) == 0, err
	})
}

func runningPods(kube client.Client, want int) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := kube.List(ctx, pods, client.InNamespace("work")); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == want, nil
	}
}

// chartEnv is the controller's environment as the rendered Deployment sets it, with the values the kubelet
// would fill in (SYSTEM_NAMESPACE) and without the ports (StartLathe picks free ones) and resource fields.
func chartEnv(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		b, _ := yaml.Marshal(o.Object)
		if err := yaml.Unmarshal(b, d); err != nil {
			t.Fatal(err)
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			switch {
			case e.Name == "SYSTEM_NAMESPACE":
				out = append(out, e.Name+"="+systemNamespace)
			case e.Name == "METRICS_PORT" || e.Name == "HEALTH_PROBE_PORT" || e.ValueFrom != nil:
			default:
				out = append(out, e.Name+"="+e.Value)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the chart rendered no Deployment environment")
	}
	return out
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates with a token of the chart's ServiceAccount.
func serviceAccountKubeconfig(t *testing.T, c *localcluster.Cluster, dir string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(systemNamespace).CreateToken(context.Background(), "lathe",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a ServiceAccount token: %v", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.RESTConfig().Host, CertificateAuthorityData: c.RESTConfig().CAData}
	cfg.AuthInfos["lathe"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["lathe"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "lathe"}
	cfg.CurrentContext = "lathe"
	path := filepath.Join(dir, "lathe.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func apply(t *testing.T, applier *localcluster.Applier, objs []*unstructured.Unstructured) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if _, err := applier.Apply(context.Background(), []byte(strings.Join(docs, "---\n")), nil); err != nil {
		t.Fatalf("applying the chart's RBAC: %v", err)
	}
}

func create(t *testing.T, kube client.Client, obj client.Object) {
	t.Helper()
	if err := kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func buildLathe(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "lathe")
	out, err := runGo(filepath.Join("..", "..", ".."), "build", "-o", bin, "./cmd/lathe")
	if err != nil {
		t.Fatalf("building lathe: %v\n%s", err, out)
	}
	return bin
}

// eventually polls cond every 250ms until it is true, and fails the test at timeout or on an error.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func tail(t *testing.T, path string, n int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	fmt.Fprintln(os.Stderr, strings.Join(lines, "\n"))
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
