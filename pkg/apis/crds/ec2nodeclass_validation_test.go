package crds_test

import (
	"context"
	"strings"
	"testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

const ec2NodeClassBase = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
spec:
  role: KarpenterNodeRole-test
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
`

func TestEC2NodeClassValidation(t *testing.T) {
	runVerdicts(t, ec2NodeClassBase, []verdict{
		{name: "minimal class", patch: ""},
		{name: "instance profile instead of role", patch: "spec: {role: null, instanceProfile: KarpenterNodeInstanceProfile}"},
		{name: "role and instance profile", patch: "spec: {instanceProfile: KarpenterNodeInstanceProfile}", reject: "must specify exactly one of ['role', 'instanceProfile']"},
		{name: "neither role nor instance profile", patch: "spec: {role: null}", reject: "must specify exactly one of ['role', 'instanceProfile']"},
		{name: "empty role", patch: "spec: {role: ''}", reject: "role cannot be empty"},
		{name: "empty instance profile", patch: "spec: {role: null, instanceProfile: ''}", reject: "instanceProfile cannot be empty"},
		{name: "pinned al2023 alias", patch: "spec: {amiSelectorTerms: [{alias: al2023@v20240703}]}"},
		{name: "pinned bottlerocket alias", patch: "spec: {amiSelectorTerms: [{alias: bottlerocket@v1.20.4}]}"},
		{name: "al2 alias", patch: "spec: {amiSelectorTerms: [{alias: al2@latest}]}"},
		{name: "windows2022 latest", patch: "spec: {amiSelectorTerms: [{alias: windows2022@latest}]}"},
		{name: "windows2025 latest", patch: "spec: {amiSelectorTerms: [{alias: windows2025@latest}]}"},
		{name: "windows pinned", patch: "spec: {amiSelectorTerms: [{alias: windows2019@v20240101}]}", reject: "windows families may only specify version 'latest'"},
		{name: "unknown alias family", patch: "spec: {amiSelectorTerms: [{alias: ubuntu@latest}]}", reject: "family is not supported"},
		{name: "alias without version", patch: "spec: {amiSelectorTerms: [{alias: al2023}]}", reject: "'alias' is improperly formatted, must match the format 'family@version'"},
		{name: "alias too long", patch: "spec: {amiSelectorTerms: [{alias: al2023@v2024070300000000000000000}]}", reject: "Too long"},
		{name: "alias with id in one term", patch: "spec: {amiSelectorTerms: [{alias: al2023@latest, id: ami-123}]}", reject: "mutually exclusive"},
		{name: "alias with another term", patch: "spec: {amiSelectorTerms: [{alias: al2023@latest}, {tags: {a: b}}]}", reject: "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"},
		{name: "id with tags", patch: "spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, tags: {a: b}}]}", reject: "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"},
		{name: "id without family", patch: "spec: {amiSelectorTerms: [{id: ami-0123456789abcdef0}]}", reject: "must specify amiFamily if amiSelectorTerms does not contain an alias"},
		{name: "id with family", patch: "spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0123456789abcdef0}]}"},
		{name: "name and owner", patch: "spec: {amiFamily: Bottlerocket, amiSelectorTerms: [{name: 'bottlerocket-*', owner: amazon}]}"},
		{name: "ssm parameter", patch: "spec: {amiFamily: Custom, amiSelectorTerms: [{ssmParameter: /my/ami}]}"},
		{name: "malformed ami id", patch: "spec: {amiFamily: AL2023, amiSelectorTerms: [{id: image-1}]}", reject: "should match"},
		{name: "alias with matching family", patch: "spec: {amiFamily: AL2023}"},
		{name: "alias with Custom family", patch: "spec: {amiFamily: Custom}"},
		{name: "alias with other family", patch: "spec: {amiFamily: AL2}", reject: "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"},
		{name: "bottlerocket alias with AL2023 family", patch: "spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: bottlerocket@latest}]}", reject: "amiFamily must be 'Bottlerocket' or 'Custom'"},
		{name: "unknown family", patch: "spec: {amiFamily: Ubuntu}", reject: "Unsupported value"},
		{name: "no ami terms", patch: "spec: {amiSelectorTerms: []}", reject: "should have at least 1 items"},
		{name: "empty ami term", patch: "spec: {amiSelectorTerms: [{}]}", reject: "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"},
		{name: "no subnet terms", patch: "spec: {subnetSelectorTerms: []}", reject: "subnetSelectorTerms cannot be empty"},
		{name: "empty subnet term", patch: "spec: {subnetSelectorTerms: [{}]}", reject: "expected at least one, got none, ['tags', 'id']"},
		{name: "subnet id with tags", patch: "spec: {subnetSelectorTerms: [{id: subnet-123, tags: {a: b}}]}", reject: "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"},
		{name: "subnet id", patch: "spec: {subnetSelectorTerms: [{id: subnet-0123456789abcdef0}]}"},
		{name: "malformed subnet id", patch: "spec: {subnetSelectorTerms: [{id: net-1}]}", reject: "should match"},
		{name: "subnet tag without value", patch: "spec: {subnetSelectorTerms: [{tags: {a: ''}}]}", reject: "empty tag keys or values aren't supported"},
		{name: "security group name", patch: "spec: {securityGroupSelectorTerms: [{name: my-sg}]}"},
		{name: "security group id and name", patch: "spec: {securityGroupSelectorTerms: [{id: sg-123, name: my-sg}]}", reject: "mutually exclusive"},
		{name: "no security group terms", patch: "spec: {securityGroupSelectorTerms: []}", reject: "securityGroupSelectorTerms cannot be empty"},
		{name: "empty security group term", patch: "spec: {securityGroupSelectorTerms: [{}]}", reject: "expected at least one, got none, ['tags', 'id', 'name']"},
		{name: "user tags", patch: "spec: {tags: {team: platform, cost-center: '42'}}"},
		{name: "cluster tag", patch: "spec: {tags: {kubernetes.io/cluster/test: owned}}", reject: "tag contains a restricted tag matching kubernetes.io/cluster/"},
		{name: "nodepool tag", patch: "spec: {tags: {karpenter.sh/nodepool: x}}", reject: "tag contains a restricted tag matching karpenter.sh/nodepool"},
		{name: "nodeclaim tag", patch: "spec: {tags: {karpenter.sh/nodeclaim: x}}", reject: "tag contains a restricted tag matching karpenter.sh/nodeclaim"},
		{name: "eks cluster tag", patch: "spec: {tags: {'eks:eks-cluster-name': x}}", reject: "tag contains a restricted tag matching eks:eks-cluster-name"},
		{name: "nodeclass tag", patch: "spec: {tags: {karpenter.k8s.aws/ec2nodeclass: x}}", reject: "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass"},
		{name: "root volume", patch: "spec: {blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, encrypted: true, iops: 3000, throughput: 125}}]}"},
		{name: "two root volumes", patch: "spec: {blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}, {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}]}", reject: "must have only one blockDeviceMappings with rootVolume"},
		{name: "unknown volume type", patch: "spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeType: gp4}}]}", reject: "Unsupported value"},
		{name: "volume without size or snapshot", patch: "spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]}", reject: "snapshotID or volumeSize must be defined"},
		{name: "volume size in Mi", patch: "spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100Mi}}]}", reject: "should match"},
		{name: "initialization rate without snapshot", patch: "spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeInitializationRate: 200}}]}", reject: "snapshotID must be set when volumeInitializationRate is set"},
		{name: "IMDSv1 allowed", patch: "spec: {metadataOptions: {httpTokens: optional, httpPutResponseHopLimit: 2}}"},
		{name: "unknown http tokens", patch: "spec: {metadataOptions: {httpTokens: sometimes}}", reject: "Unsupported value"},
		{name: "hop limit 65", patch: "spec: {metadataOptions: {httpPutResponseHopLimit: 65}}", reject: "should be less than or equal to 64"},
		{name: "hop limit 0", patch: "spec: {metadataOptions: {httpPutResponseHopLimit: 0}}", reject: "should be greater than or equal to 1"},
		{name: "RAID0", patch: "spec: {instanceStorePolicy: RAID0}"},
		{name: "RAID1", patch: "spec: {instanceStorePolicy: RAID1}", reject: "Unsupported value"},
		{name: "kubelet", patch: "spec: {kubelet: {maxPods: 110, podsPerCore: 10, systemReserved: {cpu: 100m, memory: 100Mi}, kubeReserved: {cpu: 200m}, evictionHard: {memory.available: 5%}, evictionSoft: {nodefs.available: 10%}, evictionSoftGracePeriod: {nodefs.available: 1m}, imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80, clusterDNS: [10.0.1.100], cpuCFSQuota: true}}"},
		{name: "negative max pods", patch: "spec: {kubelet: {maxPods: -1}}", reject: "should be greater than or equal to 0"},
		{name: "unknown eviction signal", patch: "spec: {kubelet: {evictionHard: {memory.free: 5%}}}", reject: "valid keys for evictionHard are"},
		{name: "negative kube reserved", patch: "spec: {kubelet: {kubeReserved: {cpu: '-1'}}}", reject: "kubeReserved value cannot be a negative resource quantity"},
		{name: "unknown reserved resource", patch: "spec: {kubelet: {systemReserved: {gpu: '1'}}}", reject: "valid keys for systemReserved are"},
		{name: "image GC high below low", patch: "spec: {kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}}", reject: "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"},
		{name: "soft eviction without grace period", patch: "spec: {kubelet: {evictionSoft: {memory.available: 10%}}}", reject: "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"},
		{name: "capacity reservation by id", patch: "spec: {capacityReservationSelectorTerms: [{id: cr-0123456789abcdef0}]}"},
		{name: "capacity reservation id with owner", patch: "spec: {capacityReservationSelectorTerms: [{id: cr-123, ownerID: '012345678901'}]}", reject: "'id' is mutually exclusive"},
		{name: "capacity reservation bad owner", patch: "spec: {capacityReservationSelectorTerms: [{tags: {a: b}, ownerID: '42'}]}", reject: "should match"},
		{name: "placement group by name", patch: "spec: {placementGroupSelector: {name: my-pg}}"},
		{name: "placement group by name and id", patch: "spec: {placementGroupSelector: {name: my-pg, id: pg-123}}", reject: "'name' and 'id' are mutually exclusive"},
		{name: "placement group by neither", patch: "spec: {placementGroupSelector: {}}", reject: "expected at least one, got none, ['name', 'id']"},
		{name: "placement group long name", patch: "spec: {placementGroupSelector: {name: " + strings.Repeat("p", 256) + "}}"},
		{name: "EFA interfaces", patch: "spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]}"},
		{name: "interfaces without primary", patch: "spec: {networkInterfaces: [{networkCardIndex: 1, deviceIndex: 0, interfaceType: interface}]}", reject: "networkInterfaces must include a primary interface with interfaceType='interface'"},
		{name: "efa-only primary interface", patch: "spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}]}", reject: "networkInterfaces must include a primary interface with interfaceType='interface'"},
		{name: "interface without type", patch: "spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0}]}", reject: "Required value"},
		{name: "duplicate interface", patch: "spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]}", reject: "must not have duplicate networkCardIndex and deviceIndex pairs"},
		{name: "two efa-only on one card", patch: "spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}]}", reject: "at most one efa device per network card"},
		{name: "high card and device index", patch: "spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 16, deviceIndex: 32, interfaceType: interface}]}"},
		{name: "negative ip prefix count", patch: "spec: {ipPrefixCount: -1}", reject: "should be greater than or equal to 0"},
		{name: "connection tracking", patch: "spec: {connectionTracking: {tcpEstablishedTimeout: 3600, udpStreamTimeout: 120, udpTimeout: 30}}"},
		{name: "connection tracking as durations", patch: "spec: {connectionTracking: {tcpEstablishedTimeout: 1h}}", reject: anyError},
		{name: "connection tracking empty", patch: "spec: {connectionTracking: {}}", reject: "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"},
		{name: "connection tracking udp timeout too long", patch: "spec: {connectionTracking: {udpTimeout: 61}}", reject: "should be less than or equal to 60"},
		{name: "kube reserved not a quantity", patch: "spec: {kubelet: {kubeReserved: {cpu: lots}}}", reject: "should match"},
		{name: "eviction threshold not a quantity", patch: "spec: {kubelet: {evictionHard: {memory.available: lots}}}", reject: "should match"},
		{name: "nested virtualization", patch: "spec: {cpuOptions: {nestedVirtualization: enabled}}"},
		{name: "unknown field", patch: "spec: {amiFamly: AL2023}", reject: "unknown field"},
		{name: "no spec", patch: "spec: null"},
	})
}

func TestEC2NodeClassDefaults(t *testing.T) {
	ctx := context.Background()
	obj := manifest(t, ec2NodeClassBase, "")
	obj.SetName("defaults")
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, keyOf(obj), nc); err != nil {
		t.Fatal(err)
	}
	m := nc.Spec.MetadataOptions
	if m == nil || *m.HTTPEndpoint != "enabled" || *m.HTTPProtocolIPv6 != "disabled" || *m.HTTPPutResponseHopLimit != 1 || *m.HTTPTokens != "required" {
		t.Errorf("metadataOptions = %+v, want enabled/disabled/1/required", m)
	}
}
