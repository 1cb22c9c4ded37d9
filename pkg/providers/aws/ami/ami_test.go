package ami

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

func TestAliasPaths(t *testing.T) {
	for _, c := range []struct {
		alias Alias
		k8s   string
		want  string
	}{
		{Alias{awsv1.AMIFamilyAL2023, "v20240807"}, "1.30", "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.30-v20240807/image_id"},
		{Alias{awsv1.AMIFamilyAL2023, Latest}, "1.30", "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"},
		{Alias{awsv1.AMIFamilyAL2, "v20240807"}, "1.30", "/aws/service/eks/optimized-ami/1.30/amazon-linux-2/amazon-eks-node-1.30-v20240807/image_id"},
		{Alias{awsv1.AMIFamilyBottlerocket, "v1.20.4"}, "1.30", "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/1.20.4/image_id"},
		{Alias{awsv1.AMIFamilyWindows2019, Latest}, "1.30", "/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.30/image_id"},
	} {
		params, err := c.alias.parameters(c.k8s)
		if err != nil {
			t.Fatal(err)
		}
		if params[0].path != c.want {
			t.Errorf("%s: first path %s, want %s", c.alias, params[0].path, c.want)
		}
	}
	if _, err := (Alias{awsv1.AMIFamilyWindows2025, Latest}).parameters("1.34"); err == nil {
		t.Error("windows2025 on 1.34 should be unsupported")
	}
}

func TestBetterPrefersNonDeprecatedThenNewerThenName(t *testing.T) {
	early, late := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		a, b AMI
		want bool
	}{
		{AMI{CreationDate: early}, AMI{CreationDate: late, Deprecated: true}, true},
		{AMI{CreationDate: late}, AMI{CreationDate: early}, true},
		{AMI{CreationDate: early}, AMI{CreationDate: late}, false},
		{AMI{CreationDate: early, Name: "b"}, AMI{CreationDate: early, Name: "a"}, true},
		{AMI{CreationDate: early, Name: "a"}, AMI{CreationDate: early, Name: "a"}, false},
	} {
		if got := better(c.a, c.b); got != c.want {
			t.Errorf("better(%+v, %+v) = %v", c.a, c.b, got)
		}
	}
}

func TestParametersAreCachedForTheirLifetime(t *testing.T) {
	r := fakeaws.New(fakeaws.Options{}).Start()
	defer r.Close()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	cfg := r.AWSConfig()
	p := NewProvider(ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg), func(context.Context) (string, error) { return "1.37", nil }, clk)
	alias := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	ctx := context.Background()
	list := func() []AMI {
		t.Helper()
		amis, err := p.List(ctx, alias)
		if err != nil {
			t.Fatal(err)
		}
		return amis
	}
	if n := len(list()); n != 5 {
		t.Fatalf("al2023@latest resolved %d images, want 5", n)
	}
	calls := r.Faults().Calls("ssm", "GetParameter")
	// A new release: the recommended parameter moves, but the cached value holds for 24 hours.
	newer := r.AddImage(fakeaws.Image{Name: "amazon-eks-node-al2023-x86_64-standard-1.37-v20261201", CreationDate: clk.Now(), OwnerID: "602401143452", OwnerAlias: "amazon"})
	r.SetParameter("/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id", newer.ID)
	clk.Step(23 * time.Hour)
	for _, a := range list() {
		if a.ID == newer.ID {
			t.Fatal("the recommended parameter was read again before its 24 h lifetime")
		}
	}
	if n := r.Faults().Calls("ssm", "GetParameter"); n != calls {
		t.Fatalf("GetParameter called %d more times within the lifetime", n-calls)
	}
	clk.Step(time.Hour)
	found := false
	for _, a := range list() {
		found = found || a.ID == newer.ID
	}
	if !found {
		t.Fatal("after 24 h the new recommended image is resolved")
	}
}

func TestDeprecatedLatestParametersAreInvalidated(t *testing.T) {
	r := fakeaws.New(fakeaws.Options{}).Start()
	defer r.Close()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	cfg := r.AWSConfig()
	p := NewProvider(ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg), func(context.Context) (string, error) { return "1.37", nil }, clk)
	ctx := context.Background()
	latest := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	pinned := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@v20251120"}}}}
	for _, nc := range []*awsv1.EC2NodeClass{latest, pinned} {
		if _, err := p.List(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	path := "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"
	id, _ := r.Parameter(path)
	if err := p.InvalidateDeprecated(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.params.Get(path); !ok {
		t.Fatal("a parameter whose image is not deprecated stays cached")
	}
	past := clk.Now().Add(-time.Hour)
	r.SetImageDeprecation(id, &past)
	if err := p.InvalidateDeprecated(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.params.Get(path); ok {
		t.Fatal("the recommended parameter of a deprecated image is forgotten")
	}
	pinnedPath := "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.37-v20251120/image_id"
	if _, ok := p.params.Get(pinnedPath); !ok {
		t.Fatal("a pinned release's parameter never moves, so it stays cached")
	}
}
