package fakeaws

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
)

func TestDescribeInstanceTypesPagesThroughTheCatalog(t *testing.T) {
	r := start(t)
	client := ec2.NewFromConfig(r.AWSConfig())
	pages, seen := 0, map[string]bool{}
	p := ec2.NewDescribeInstanceTypesPaginator(client, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range out.InstanceTypes {
			if seen[string(it.InstanceType)] {
				t.Fatalf("%s listed twice", it.InstanceType)
			}
			seen[string(it.InstanceType)] = true
		}
	}
	if n := len(catalog.EC2Shapes()); len(seen) != n || pages != (n+99)/100 {
		t.Fatalf("%d types in %d pages, want %d in %d", len(seen), pages, n, (n+99)/100)
	}
}

// Every field the provider reads arrives through the SDK's deserializer.
func TestDescribeInstanceTypesCarriesWhatKarpenterReads(t *testing.T) {
	r := start(t)
	out, err := ec2.NewFromConfig(r.AWSConfig()).DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"p4d.24xlarge", "inf2.xlarge", "m5.large", "a1.metal", "dl2q.24xlarge"},
	})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ec2types.InstanceTypeInfo{}
	for _, it := range out.InstanceTypes {
		byName[string(it.InstanceType)] = it
	}
	if len(byName) != 5 {
		t.Fatalf("got %d types, want 5", len(byName))
	}
	m5 := byName["m5.large"]
	if aws.ToInt32(m5.VCpuInfo.DefaultVCpus) != 2 || aws.ToInt64(m5.MemoryInfo.SizeInMiB) != 8192 || m5.Hypervisor != "nitro" ||
		m5.ProcessorInfo.SupportedArchitectures[0] != "x86_64" || aws.ToString(m5.ProcessorInfo.Manufacturer) != "Intel" ||
		aws.ToFloat64(m5.ProcessorInfo.SustainedClockSpeedInGhz) != 3.1 || !aws.ToBool(m5.CurrentGeneration) ||
		len(m5.SupportedUsageClasses) != 2 || aws.ToBool(m5.BareMetal) {
		t.Errorf("m5.large = %+v", m5)
	}
	n := m5.NetworkInfo
	if aws.ToInt32(n.MaximumNetworkInterfaces) != 3 || aws.ToInt32(n.Ipv4AddressesPerInterface) != 10 ||
		aws.ToInt32(n.NetworkCards[aws.ToInt32(n.DefaultNetworkCardIndex)].MaximumNetworkInterfaces) != 3 || aws.ToString(n.NetworkPerformance) == "" {
		t.Errorf("m5.large network = %+v", n)
	}
	if e := m5.EbsInfo; e.EbsOptimizedSupport != ec2types.EbsOptimizedSupportDefault || aws.ToInt32(e.EbsOptimizedInfo.MaximumBandwidthInMbps) != 4750 {
		t.Errorf("m5.large ebs = %+v", e)
	}
	p4d := byName["p4d.24xlarge"]
	if g := p4d.GpuInfo; g == nil || len(g.Gpus) != 1 || aws.ToString(g.Gpus[0].Name) != "A100" || aws.ToString(g.Gpus[0].Manufacturer) != "NVIDIA" ||
		aws.ToInt32(g.Gpus[0].Count) != 8 || aws.ToInt32(g.Gpus[0].MemoryInfo.SizeInMiB) != 40960 {
		t.Errorf("p4d.24xlarge gpus = %+v", p4d.GpuInfo)
	}
	if !aws.ToBool(p4d.NetworkInfo.EfaSupported) || aws.ToInt32(p4d.NetworkInfo.EfaInfo.MaximumEfaInterfaces) != 4 {
		t.Errorf("p4d.24xlarge efa = %+v", p4d.NetworkInfo)
	}
	if s := p4d.InstanceStorageInfo; s == nil || aws.ToInt64(s.TotalSizeInGB) != 8000 || s.NvmeSupport != ec2types.EphemeralNvmeSupportRequired {
		t.Errorf("p4d.24xlarge storage = %+v", s)
	}
	inf2 := byName["inf2.xlarge"]
	if ni := inf2.NeuronInfo; ni == nil || aws.ToString(ni.NeuronDevices[0].Name) != "Inferentia2" || aws.ToInt32(ni.NeuronDevices[0].Count) != 1 ||
		aws.ToInt32(ni.NeuronDevices[0].CoreInfo.Count) != 2 {
		t.Errorf("inf2.xlarge neuron = %+v", inf2.NeuronInfo)
	}
	if a := byName["dl2q.24xlarge"].InferenceAcceleratorInfo; a == nil || len(a.Accelerators) != 1 || aws.ToString(a.Accelerators[0].Name) != "Qualcomm Ai100" ||
		aws.ToString(a.Accelerators[0].Manufacturer) != "Qualcomm" || aws.ToInt32(a.Accelerators[0].Count) != 8 {
		t.Errorf("dl2q.24xlarge inference accelerators = %+v", a)
	}
	if metal := byName["a1.metal"]; !aws.ToBool(metal.BareMetal) || metal.Hypervisor != "" {
		t.Errorf("a1.metal = bare metal %v, hypervisor %q", aws.ToBool(metal.BareMetal), metal.Hypervisor)
	}
}

func TestDescribeInstanceTypesFilters(t *testing.T) {
	r := start(t)
	out, err := ec2.NewFromConfig(r.AWSConfig()).DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"arm64"}},
			{Name: aws.String("instance-type"), Values: []string{"m6g.*", "c5.large"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) == 0 {
		t.Fatal("no arm64 m6g types")
	}
	for _, it := range out.InstanceTypes {
		if it.ProcessorInfo.SupportedArchitectures[0] != ec2types.ArchitectureTypeArm64 {
			t.Errorf("%s is %v", it.InstanceType, it.ProcessorInfo.SupportedArchitectures)
		}
	}
}

func TestDescribeInstanceTypeOfferingsPerZoneAndRemoval(t *testing.T) {
	r := start(t)
	client := ec2.NewFromConfig(r.AWSConfig())
	offered := func(locationType ec2types.LocationType) map[string][]string {
		t.Helper()
		out := map[string][]string{}
		p := ec2.NewDescribeInstanceTypeOfferingsPaginator(client, &ec2.DescribeInstanceTypeOfferingsInput{
			LocationType: locationType, MaxResults: aws.Int32(500),
			Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.*"}}},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.InstanceTypeOfferings {
				if o.LocationType != locationType {
					t.Fatalf("location type %s, want %s", o.LocationType, locationType)
				}
				out[string(o.InstanceType)] = append(out[string(o.InstanceType)], aws.ToString(o.Location))
			}
		}
		return out
	}
	if got := offered(ec2types.LocationTypeAvailabilityZone)["m5.large"]; len(got) != 3 {
		t.Fatalf("m5.large offered in %v, want every zone", got)
	}
	r.RemoveOffering("m5.large", "us-east-1b")
	got := offered(ec2types.LocationTypeAvailabilityZone)["m5.large"]
	if len(got) != 2 || got[0] != "us-east-1a" || got[1] != "us-east-1c" {
		t.Fatalf("m5.large offered in %v after removing us-east-1b", got)
	}
	if got := offered(ec2types.LocationTypeRegion)["m5.large"]; len(got) != 1 || got[0] != "us-east-1" {
		t.Fatalf("m5.large region offerings %v", got)
	}
	r.RestoreOffering("m5.large", "us-east-1b")
	if got := offered(ec2types.LocationTypeAvailabilityZone)["m5.large"]; len(got) != 3 {
		t.Fatalf("m5.large offered in %v after restoring", got)
	}
}

func TestSmallPagesListEveryTypeOnce(t *testing.T) {
	r := start(t)
	client := ec2.NewFromConfig(r.AWSConfig())
	filter := []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.*"}}}
	var types, offerings []string
	pages := 0
	for p := ec2.NewDescribeInstanceTypesPaginator(client, &ec2.DescribeInstanceTypesInput{Filters: filter, MaxResults: aws.Int32(5)}); p.HasMorePages(); {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range out.InstanceTypes {
			types = append(types, string(it.InstanceType))
		}
	}
	for p := ec2.NewDescribeInstanceTypeOfferingsPaginator(client, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone, Filters: filter, MaxResults: aws.Int32(7),
	}); p.HasMorePages(); {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.InstanceTypeOfferings {
			offerings = append(offerings, string(o.InstanceType)+"/"+aws.ToString(o.Location))
		}
	}
	var want []string
	for _, s := range catalog.EC2Shapes() {
		if len(s.Name) > 3 && s.Name[:3] == "m5." {
			want = append(want, s.Name)
		}
	}
	if len(types) != len(want) || pages != (len(want)+4)/5 {
		t.Fatalf("%d m5 types in %d pages, want %d in %d", len(types), pages, len(want), (len(want)+4)/5)
	}
	seen := map[string]bool{}
	for _, o := range offerings {
		if seen[o] {
			t.Fatalf("offering %s listed twice", o)
		}
		seen[o] = true
	}
	if len(offerings) != 3*len(want) {
		t.Fatalf("%d offerings, want %d", len(offerings), 3*len(want))
	}
}
