package catalog_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

func byName(its cloudprovider.InstanceTypes, name string) *cloudprovider.InstanceType {
	for _, it := range its {
		if it.Name == name {
			return it
		}
	}
	return nil
}

func TestEC2(t *testing.T) {
	its, err := catalog.EC2(catalog.EC2Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != 1363 {
		t.Errorf("got %d types, want 1363", len(its))
	}
	m5 := byName(its, "m5.large")
	if m5 == nil {
		t.Fatal("m5.large missing")
	}
	alloc := m5.Allocatable()
	cpu, mem, pods := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory], alloc[corev1.ResourcePods]
	eph := alloc[corev1.ResourceEphemeralStorage]
	if cpu.MilliValue() != 1930 || mem.Value() != 6903<<20 || pods.Value() != 29 || eph.Value() != 17<<30 {
		t.Errorf("m5.large allocatable = cpu %s memory %s pods %s ephemeral %s", cpu.String(), mem.String(), pods.String(), eph.String())
	}
	labels := m5.Requirements.Labels()
	for k, want := range map[string]string{
		awsv1.LabelInstanceFamily: "m5", awsv1.LabelInstanceCategory: "m", awsv1.LabelInstanceGeneration: "5",
		awsv1.LabelInstanceCPU: "2", awsv1.LabelInstanceMemory: "8192", awsv1.LabelInstanceHypervisor: "nitro",
		v1.LabelArch: "amd64", v1.LabelOS: "linux", v1.LabelInstanceType: "m5.large",
	} {
		if labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, labels[k], want)
		}
	}
	if gpu := m5.Requirements.Get(awsv1.LabelInstanceGPUCount); !gpu.AllowsAbsent() || gpu.Has("1") {
		t.Errorf("m5.large %s = %s, want DoesNotExist (a pod asking for GPUs must not match it)", awsv1.LabelInstanceGPUCount, gpu)
	}
	if got := m5.Requirements.Get(v1.LabelTopologyZone).Values(); strings.Join(got, ",") != "us-east-1a,us-east-1b,us-east-1c" {
		t.Errorf("zones = %v", got)
	}
	od, _ := m5.Offerings.Compatible(capacityType(v1.CapacityTypeOnDemand)).Cheapest()
	spot, _ := m5.Offerings.Compatible(capacityType(v1.CapacityTypeSpot)).Cheapest()
	if od.Price != 0.096 || spot.Price != 0.096*0.35 || len(m5.Offerings) != 6 {
		t.Errorf("m5.large prices on-demand %v spot %v (%d offerings)", od.Price, spot.Price, len(m5.Offerings))
	}
	p5 := byName(its, "p5.48xlarge")
	if gpus := p5.Capacity["nvidia.com/gpu"]; gpus.Value() != 8 || p5.Requirements.Labels()[awsv1.LabelInstanceGPUName] != "h100" {
		t.Errorf("p5.48xlarge gpus = %s labels %v", gpus.String(), p5.Requirements.Labels())
	}
	cmr, err := catalog.EC2(catalog.EC2Options{Categories: []string{"c", "m", "r"}})
	if err != nil || len(cmr) == 0 || len(cmr) >= len(its) {
		t.Errorf("category filter: %d types, %v", len(cmr), err)
	}
}

func capacityType(ct string) scheduling.Requirements {
	return scheduling.FromLabels(map[string]string{v1.CapacityTypeLabelKey: ct})
}

func TestKarpenterBenchmark(t *testing.T) {
	its := catalog.KarpenterBenchmark()
	if len(its) != 400 {
		t.Fatalf("got %d types", len(its))
	}
	last := its[399]
	alloc := last.Allocatable()
	cpu, mem, pods := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory], alloc[corev1.ResourcePods]
	if last.Name != "fake-it-399" || cpu.MilliValue() != 399900 || mem.Value() != 800<<30-10<<20 || pods.Value() != 4000 {
		t.Errorf("%s allocatable cpu %s memory %s pods %s", last.Name, cpu.String(), mem.String(), pods.String())
	}
	if len(last.Offerings) != 5 || last.Offerings[0].Price != 400*0.3147483648 {
		t.Errorf("offerings %+v", last.Offerings)
	}
	if !last.Requirements.Get(v1.LabelOS).Has("windows") {
		t.Errorf("os requirement %s", last.Requirements.Get(v1.LabelOS))
	}
}

func TestFileRoundTrip(t *testing.T) {
	original := catalog.KarpenterBenchmark()[:3]
	data, err := yaml.Marshal(catalog.ToFile(original))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := catalog.Load(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("loading %s: %v", data, err)
	}
	for i := range original {
		if loaded[i].Name != original[i].Name || loaded[i].Requirements.String() != original[i].Requirements.String() {
			t.Errorf("type %d: %s %s, want %s %s", i, loaded[i].Name, loaded[i].Requirements, original[i].Name, original[i].Requirements)
		}
		a, b := loaded[i].Allocatable(), original[i].Allocatable()
		for name, q := range b {
			if got := a[name]; got.Cmp(q) != 0 {
				t.Errorf("type %d %s = %s, want %s", i, name, got.String(), q.String())
			}
		}
		if len(loaded[i].Offerings) != len(original[i].Offerings) || loaded[i].Offerings[4] != original[i].Offerings[4] {
			t.Errorf("type %d offerings differ", i)
		}
	}
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name, file, wantErr string
	}{
		{"explicit offerings", `
instanceTypes:
- name: small
  capacity: {cpu: "2", memory: 4Gi, pods: "10"}
  overhead: {kubeReserved: {cpu: 100m}}
  labels: {kubernetes.io/arch: arm64}
  offerings:
  - {zone: z1, capacityType: on-demand, price: 0.1}
  - {zone: z2, capacityType: spot, price: 0.03, available: false}
`, ""},
		{"no offerings", "instanceTypes:\n- name: a\n  capacity: {cpu: \"1\"}\n  offerings: []\n", "no offerings"},
		{"duplicate", "instanceTypes:\n- {name: a, offerings: [{zone: z, capacityType: spot, price: 1}]}\n- {name: a, offerings: [{zone: z, capacityType: spot, price: 1}]}\n", "twice"},
		{"unknown field", "instanceTypes:\n- {name: a, cpus: 3}\n", "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			its, err := catalog.Load(strings.NewReader(tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			it := its[0]
			if len(it.Offerings.Available()) != 1 || it.Requirements.Labels()[v1.LabelArch] != "arm64" {
				t.Errorf("loaded %+v", it)
			}
			if zones := it.Requirements.Get(v1.LabelTopologyZone).Values(); len(zones) != 2 {
				t.Errorf("zones %v", zones)
			}
			cpu := it.Allocatable()[corev1.ResourceCPU]
			if cpu.MilliValue() != 1900 {
				t.Errorf("allocatable cpu %s", cpu.String())
			}
		})
	}
}
