package launchtemplate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/launchtemplate"
)

// TestUserDataBytesPerNodeClass: creating a template records its user data size (before base64) for its
// EC2NodeClass, the latest creation wins, and deleting the class's templates drops its series.
func TestUserDataBytesPerNodeClass(t *testing.T) {
	fake := fakeaws.New(fakeaws.Options{}).Start()
	t.Cleanup(fake.Close)
	reg := prometheus.NewRegistry()
	p := launchtemplate.New(ec2.NewFromConfig(fake.AWSConfig()), "demo", nil, reg)
	ctx := context.Background()
	for _, in := range []launchtemplate.Input{
		{NodeClassName: "default", ImageID: "ami-1", UserData: strings.Repeat("x", 1000)},
		{NodeClassName: "gpu", ImageID: "ami-1", UserData: strings.Repeat("y", 300)},
		{NodeClassName: "default", ImageID: "ami-2", UserData: strings.Repeat("z", 1200)},
	} {
		if _, err := p.Ensure(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	gauge := launchtemplate.NewUserDataBytes(reg)
	if got := testutil.ToFloat64(gauge.WithLabelValues("default")); got != 1200 {
		t.Errorf("userdata_bytes{nodeclass=default} = %v, want 1200 (the last template created)", got)
	}
	if got := testutil.ToFloat64(gauge.WithLabelValues("gpu")); got != 300 {
		t.Errorf("userdata_bytes{nodeclass=gpu} = %v, want 300", got)
	}
	if err := p.DeleteForNodeClass(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "gpu" {
					t.Errorf("%s still has a series for the deleted class gpu", f.GetName())
				}
			}
		}
	}
}
