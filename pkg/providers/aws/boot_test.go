package aws_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// Each AMI family's user data, as the provider renders it, boots a node in the fake that carries the
// NodeClaim's labels and taints.
func TestEachFamilyBootsANodeWithTheNodeClaimsLabelsAndTaints(t *testing.T) {
	for family, parameter := range map[string]string{
		awsv1.AMIFamilyAL2023:       "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id",
		awsv1.AMIFamilyAL2:          "/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id",
		awsv1.AMIFamilyBottlerocket: "/aws/service/bottlerocket/aws-k8s-1.32/x86_64/latest/image_id",
	} {
		t.Run(family, func(t *testing.T) {
			cluster := "demo-" + family
			h := newHarnessUnderPolicy(t, cluster, func(d *aws.Deps) {
				d.UserData, d.ClusterCIDR, d.ClusterDNS, d.ClusterCABundle = aws.RenderUserData, "10.100.0.0/16", "10.100.0.10", "Q0E="
			})
			h.fake.SeedEKSOptimizedImages("1.32")
			image, ok := h.fake.Parameter(parameter)
			if !ok {
				t.Fatalf("no image at %s", parameter)
			}
			h.provider = h.newProvider(t, func(d *aws.Deps) {
				d.UserData, d.ClusterCIDR, d.ClusterDNS, d.ClusterCABundle, d.ClusterName = aws.RenderUserData, "10.100.0.0/16", "10.100.0.10", "Q0E=", cluster
			})
			if err := h.fake.BootNodesInto(env.Client, fakeaws.BootOptions{ClusterName: cluster, ClusterEndpoint: "https://127.0.0.1:6443",
				ClusterCABundle: "Q0E=", Parse: fakeaws.ParseUserData, Log: testr.New(t)}); err != nil {
				t.Fatal(err)
			}
			nc := nodeClass(t, "boot-"+lower(family), func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs[0].ID = image })
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: lower(family) + "@latest"}}
			if err := env.Client.Update(context.Background(), nc); err != nil {
				t.Fatal(err)
			}
			claim := nodeClaim(nc.Name, "on-demand", "m5.large")
			claim.Labels["team"] = "blue"
			claim.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "blue", Effect: corev1.TaintEffectNoSchedule}}
			got, err := h.provider.Create(context.Background(), claim)
			if err != nil {
				t.Fatal(err)
			}
			h.fake.WaitForBoots()
			nodes := &corev1.NodeList{}
			if err := env.Client.List(context.Background(), nodes); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(nodes.Items, func(n corev1.Node) bool { return n.Spec.ProviderID == got.Status.ProviderID })
			if i < 0 {
				t.Fatalf("no node joined for %s", got.Status.ProviderID)
			}
			node := nodes.Items[i]
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &node) })
			if node.Labels["team"] != "blue" || node.Labels[v1.NodePoolLabelKey] != "default" {
				t.Errorf("node labels = %v", node.Labels)
			}
			for _, want := range []corev1.Taint{claim.Spec.Taints[0], v1.UnregisteredNoExecuteTaint} {
				if !slices.ContainsFunc(node.Spec.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&want) }) {
					t.Errorf("node taints %v lack %v", node.Spec.Taints, want)
				}
			}
		})
	}
}

func lower(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

// User data for another family than the image's (an AL2023 NodeConfig on an AL2 image) is a node that never
// joins, as on EKS.
func TestUserDataTheImageCannotReadNeverJoins(t *testing.T) {
	h := newHarness(t, func(d *aws.Deps) { d.UserData, d.ClusterCIDR = aws.RenderUserData, "10.100.0.0/16" })
	h.fake.SeedEKSOptimizedImages("1.32")
	al2, ok := h.fake.Parameter("/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id")
	if !ok {
		t.Fatal("no AL2 image")
	}
	var logs []string
	if err := h.fake.BootNodesInto(env.Client, fakeaws.BootOptions{ClusterName: clusterName, Parse: fakeaws.ParseUserData,
		Log: funcr.New(func(_, args string) { logs = append(logs, args) }, funcr.Options{})}); err != nil {
		t.Fatal(err)
	}
	nc := nodeClass(t, "wrongfamily", func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs[0].ID = al2 })
	got, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "on-demand", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	h.fake.WaitForBoots()
	nodes := &corev1.NodeList{}
	if err := env.Client.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Spec.ProviderID == got.Status.ProviderID }) {
		t.Fatal("a node joined from user data its image can't read")
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "AL2 user data") {
		t.Fatalf("logs = %v, want why the instance never joined", logs)
	}
}
