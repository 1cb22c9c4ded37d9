package fakeaws

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// parseLines reads a test document of "cluster=<name>" and "label=<k>=<v>" lines; anything else fails, as
// a node's bootstrap fails on a document it can't read.
func parseLines(family, doc string) (BootNode, error) {
	out := BootNode{Labels: map[string]string{}}
	if family != "AL2023" {
		return out, errors.New("test parser reads AL2023 only")
	}
	for _, line := range strings.Split(strings.TrimSpace(doc), "\n") {
		key, value, _ := strings.Cut(line, "=")
		switch key {
		case "cluster":
			out.ClusterName = value
		case "label":
			k, v, _ := strings.Cut(value, "=")
			out.Labels[k] = v
		default:
			return out, errors.New("unreadable line " + line)
		}
	}
	return out, nil
}

func TestInstancesBootIntoNodes(t *testing.T) {
	env, err := environment.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	r := start(t)
	if err := r.BootNodesInto(env.Client, BootOptions{ClusterName: "demo", Parse: parseLines, FamilyOf: func(string) string { return "AL2023" }}); err != nil {
		t.Fatal(err)
	}
	c := ec2.NewFromConfig(r.AWSConfig())
	ctx := context.Background()
	launch := func(name, doc string) string {
		_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String("ami-1"), UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(doc)))}})
		if err != nil {
			t.Fatal(err)
		}
		in := fleetInput("", "on-demand", "m5.large")
		in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String(name)
		out, err := c.CreateFleet(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return out.Instances[0].InstanceIds[0]
	}
	joins := launch("joins", "cluster=demo\nlabel=team=a")
	launch("other", "cluster=elsewhere")
	launch("unreadable", "#!/bin/bash\n/etc/eks/bootstrap.sh demo")
	r.WaitForBoots()

	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 {
		t.Fatalf("nodes = %d, want 1 (only the instance whose user data joins demo)", len(nodes.Items))
	}
	node := nodes.Items[0]
	if node.Spec.ProviderID != "aws:///us-east-1a/"+joins || node.Labels["team"] != "a" || node.Labels["node.kubernetes.io/instance-type"] != "m5.large" ||
		node.Annotations["kwok.x-k8s.io/node"] != "fake" || node.Status.Allocatable.Cpu().IsZero() {
		t.Fatalf("node = %+v", node)
	}
	// A kubelet registers with the beta twins of its os, arch and instance type labels (kubelet
	// updateDefaultLabels), the cloud's node controller adds the zone and region ones.
	for key, want := range map[string]string{"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"beta.kubernetes.io/instance-type": "m5.large", "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
		"failure-domain.beta.kubernetes.io/region": "us-east-1"} {
		if got := node.Labels[key]; got != want {
			t.Errorf("node label %s = %q, want %q", key, got, want)
		}
	}

	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{joins}}); err != nil {
		t.Fatal(err)
	}
	r.WaitForBoots()
	err = env.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &corev1.Node{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("node of a terminated instance: %v", err)
	}
}
