package chart_test

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lathe-autoscaler/lathe/pkg/test/chart"
)

// gettingStarted are the --set flags of Karpenter's getting-started guide, parsed with Helm's strvals as the
// CLI parses them.
var gettingStarted = []string{
	"settings.clusterName=demo",
	"settings.interruptionQueue=demo",
	"controller.resources.requests.cpu=1",
	"controller.resources.requests.memory=1Gi",
	"controller.resources.limits.cpu=1",
	"controller.resources.limits.memory=1Gi",
}

// karpenterValues is Karpenter's own values.yaml (v1.14.1), unchanged.
var karpenterValues = filepath.Join("testdata", "karpenter-values.yaml")

func TestRenderedManifestsAreAccepted(t *testing.T) {
	tests := []struct {
		name  string
		opts  chart.Options
		kinds map[string]int // objects rendered besides the Deployment, ServiceAccount, Service, PDB and ClusterRole(Binding)
		check func(t *testing.T, d *appsv1.Deployment)
	}{
		{name: "defaults", check: func(t *testing.T, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			if *d.Spec.Replicas != 2 || pod.PriorityClassName != "system-cluster-critical" || pod.NodeSelector["kubernetes.io/os"] != "linux" {
				t.Errorf("replicas %d, priorityClassName %q, nodeSelector %v", *d.Spec.Replicas, pod.PriorityClassName, pod.NodeSelector)
			}
			if c := container(t, d); c.Image != "ghcr.io/lathe-autoscaler/lathe:0.1.0" {
				t.Errorf("image %q, want the chart's appVersion", c.Image)
			}
			wantEnv(t, d, map[string]string{"CLOUD_PROVIDER": "aws", "METRICS_PORT": "8080", "HEALTH_PROBE_PORT": "8081", "LOG_LEVEL": "info",
				"BATCH_MAX_DURATION": "10s", "BATCH_IDLE_DURATION": "1s", "VM_MEMORY_OVERHEAD_PERCENT": "0.075", "ISOLATED_VPC": "false",
				"FEATURE_GATES": "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"})
			wantNoEnv(t, d, "CLUSTER_NAME", "INTERRUPTION_QUEUE", "CLUSTER_ENDPOINT")
			wantEnvFrom(t, d, "CPU_REQUESTS", "requests.cpu")
			wantControllerOffItsNodes(t, d)
		}},
		{name: "getting started flags", opts: chart.Options{Set: gettingStarted}, check: func(t *testing.T, d *appsv1.Deployment) {
			wantEnv(t, d, map[string]string{"CLUSTER_NAME": "demo", "INTERRUPTION_QUEUE": "demo"})
			wantEnvFrom(t, d, "CPU_REQUESTS", "requests.cpu")
			wantEnvFrom(t, d, "MEMORY_LIMIT", "limits.memory")
			want := corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
			if got := container(t, d).Resources; !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("resources %v, want %v", got, want)
			}
			wantControllerOffItsNodes(t, d)
		}},
		{name: "karpenter values.yaml", opts: chart.Options{ValuesFiles: []string{karpenterValues}, Set: []string{"settings.clusterName=demo"}}, check: func(t *testing.T, d *appsv1.Deployment) {
			wantEnv(t, d, map[string]string{"CLUSTER_NAME": "demo", "PREFERENCE_POLICY": "Respect", "MIN_VALUES_POLICY": "Strict", "RESERVED_ENIS": "0",
				"IGNORE_DRA_REQUESTS": "true", "AMI_REFRESH_INTERVAL": "1m", "SUBNET_REFRESH_INTERVAL": "1m"})
			if c := container(t, d); !strings.HasPrefix(c.Image, "public.ecr.aws/karpenter/controller:1.13.0@sha256:") {
				t.Errorf("image %q: the values file's image must be honoured", c.Image)
			}
			wantControllerOffItsNodes(t, d)
		}},
		{name: "karpenter values.yaml without flags", opts: chart.Options{ValuesFiles: []string{karpenterValues}}},
		{name: "every option", opts: chart.Options{APIVersions: []string{"monitoring.coreos.com/v1"}, Values: everyOption()},
			// The simulated provider's Role and RoleBinding for kube-system/lathe-sim join the Lease's.
			kinds: map[string]int{"Role": 2, "RoleBinding": 2, "ServiceMonitor": 1}, check: func(t *testing.T, d *appsv1.Deployment) {
				wantEnv(t, d, map[string]string{"CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "ISOLATED_VPC": "true",
					"VM_MEMORY_OVERHEAD_PERCENT": "0.1", "BATCH_MAX_DURATION": "20s", "BATCH_IDLE_DURATION": "2s", "LOG_LEVEL": "debug",
					"CLOUD_PROVIDER": "sim", "NOMINATED_NODE_NAME": "false", "KUBE_CLIENT_QPS": "50", "LOG_OUTPUT_PATHS": "stdout,/tmp/lathe.log",
					"FEATURE_GATES": "NodeRepair=true,ReservedCapacity=false,SpotToSpotConsolidation=true,NodeOverlay=false,StaticCapacity=true,CapacityBuffer=false"})
				pod := d.Spec.Template.Spec
				if len(pod.Containers) != 2 || len(pod.Containers[1].VolumeMounts) != 2 || len(pod.Volumes) != 1 || len(pod.InitContainers) != 1 {
					t.Errorf("want the sidecar with both mounts, one volume and one init container: %+v", pod)
				}
				if c := container(t, d); c.Image != "example.com/lathe:dev@sha256:0000000000000000000000000000000000000000000000000000000000000000" || c.Name != "lathe" {
					t.Errorf("image %q, container %q", c.Image, c.Name)
				}
				if pod.Affinity.NodeAffinity == nil || pod.Affinity.PodAntiAffinity != nil || pod.TopologySpreadConstraints[0].TopologyKey != "kubernetes.io/hostname" {
					t.Errorf("affinity and topology spread must be the values': %+v %+v", pod.Affinity, pod.TopologySpreadConstraints)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, "lathe", tc.opts)
			want := map[string]int{"Deployment": 1, "ServiceAccount": 1, "Service": 1, "PodDisruptionBudget": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
				"Role": 1, "RoleBinding": 1, "ServiceMonitor": 0}
			for kind, n := range tc.kinds {
				want[kind] = n
			}
			for kind, n := range want {
				if kinds(r.Objects)[kind] != n {
					t.Errorf("rendered %d %s, want %d", kinds(r.Objects)[kind], kind, n)
				}
			}
			dryRunApply(t, r.CRDs)
			dryRunApply(t, r.Objects)
			if tc.check != nil {
				tc.check(t, deployment(t, r.Objects))
			}
		})
	}
}

// everyOption sets each value the chart templates read to something other than its default. Values maps
// merge into the defaults, as with the helm CLI: a null (podAntiAffinity) removes a default key.
func everyOption() map[string]any {
	list := func(v ...any) []any { return v }
	return map[string]any{
		"nameOverride": "autoscaler", "additionalLabels": map[string]any{"team": "platform"}, "additionalAnnotations": map[string]any{"owner": "platform"},
		"imagePullPolicy": "Always", "imagePullSecrets": list(map[string]any{"name": "regcred"}),
		"service":                    map[string]any{"annotations": map[string]any{"a": "b"}},
		"serviceAccount":             map[string]any{"name": "lathe-controller", "annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/lathe"}},
		"additionalClusterRoleRules": list(map[string]any{"apiGroups": list(""), "resources": list("configmaps"), "verbs": list("get")}),
		"serviceMonitor":             map[string]any{"enabled": true, "additionalLabels": map[string]any{"release": "prom"}, "sampleLimit": 1000, "endpointConfig": map[string]any{"interval": "15s"}},
		"prometheusRule":             map[string]any{"enabled": true}, "grafanaDashboards": map[string]any{"enabled": true},
		"replicas": 3, "revisionHistoryLimit": 2, "podLabels": map[string]any{"tier": "control"}, "podAnnotations": map[string]any{"x": "y"},
		"podDisruptionBudget": map[string]any{"name": "lathe-pdb", "maxUnavailable": 2}, "terminationGracePeriodSeconds": 60,
		"hostNetwork": true, "dnsPolicy": "Default", "dnsConfig": map[string]any{"options": list(map[string]any{"name": "ndots", "value": "1"})},
		"initContainers": list(map[string]any{"name": "init", "image": "busybox"}),
		"affinity": map[string]any{"podAntiAffinity": nil, "nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": list(map[string]any{"matchExpressions": list(map[string]any{"key": "node-role", "operator": "In", "values": list("system")})})}}},
		"topologySpreadConstraints": list(map[string]any{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}),
		"extraVolumes":              list(map[string]any{"name": "scratch", "emptyDir": map[string]any{}}),
		"controller": map[string]any{
			"containerName":       "lathe",
			"image":               map[string]any{"repository": "example.com/lathe", "tag": "dev", "digest": "sha256:" + strings.Repeat("0", 64)},
			"env":                 list(map[string]any{"name": "KUBE_CLIENT_QPS", "value": "50"}),
			"envFrom":             list(map[string]any{"configMapRef": map[string]any{"name": "lathe-extra", "optional": true}}),
			"securityContext":     map[string]any{"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"extraVolumeMounts":   list(map[string]any{"name": "scratch", "mountPath": "/scratch"}),
			"sidecarContainer":    list(map[string]any{"name": "proxy", "image": "example.com/proxy:1"}),
			"sidecarVolumeMounts": list(map[string]any{"name": "scratch", "mountPath": "/sidecar"}),
			"metrics":             map[string]any{"port": 9090}, "healthProbe": map[string]any{"port": 9091},
		},
		"logLevel": "debug", "logOutputPaths": list("stdout", "/tmp/lathe.log"),
		"settings": map[string]any{
			"clusterName": "prod", "clusterEndpoint": "https://example.eks.amazonaws.com", "isolatedVPC": true, "vmMemoryOverheadPercent": 0.1,
			"batchMaxDuration": "20s", "batchIdleDuration": "2s", "cloudProvider": "sim", "nominatedNodeName": "false", "planUntriedPods": false,
			"featureGates": map[string]any{"nodeRepair": true, "reservedCapacity": false, "spotToSpotConsolidation": true, "staticCapacity": true},
		},
	}
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(find(t, objs, "Deployment").Object, d, true); err != nil {
		t.Fatalf("decoding Deployment: %v", err)
	}
	return d
}

func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	return d.Spec.Template.Spec.Containers[0]
}

// envByName returns the controller's environment by name; a later entry wins, as with the kubelet.
func envByName(t *testing.T, d *appsv1.Deployment) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range container(t, d).Env {
		out[e.Name] = e
	}
	return out
}

func wantEnv(t *testing.T, d *appsv1.Deployment, want map[string]string) {
	t.Helper()
	got := envByName(t, d)
	for name, value := range want {
		if e, ok := got[name]; !ok || e.Value != value {
			t.Errorf("env %s = %q (set: %v), want %q", name, e.Value, ok, value)
		}
	}
	if e := got["SYSTEM_NAMESPACE"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("SYSTEM_NAMESPACE must come from the pod's namespace: %+v", e)
	}
}

func wantNoEnv(t *testing.T, d *appsv1.Deployment, names ...string) {
	t.Helper()
	got := envByName(t, d)
	for _, name := range names {
		if e, ok := got[name]; ok {
			t.Errorf("env %s set to %+v, want unset", name, e)
		}
	}
}

func wantEnvFrom(t *testing.T, d *appsv1.Deployment, name, field string) {
	t.Helper()
	e := envByName(t, d)[name]
	if e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil || e.ValueFrom.ResourceFieldRef.Resource != field {
		t.Errorf("env %s must come from the container's %s: %+v", name, field, e)
	}
}

// wantControllerOffItsNodes checks the default scheduling: never on a node of a NodePool, one replica per
// node, spread over zones.
func wantControllerOffItsNodes(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil || pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Fatalf("no required node affinity: %+v", pod.Affinity)
	}
	terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Key != "karpenter.sh/nodepool" ||
		terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("node affinity %+v, want karpenter.sh/nodepool DoesNotExist", terms)
	}
	anti := pod.Affinity.PodAntiAffinity
	selector := map[string]string{"app.kubernetes.io/name": "lathe", "app.kubernetes.io/instance": "lathe"}
	if anti == nil || len(anti.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		anti.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != corev1.LabelHostname ||
		!equality.Semantic.DeepEqual(anti.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels, selector) {
		t.Errorf("pod anti-affinity %+v, want one per hostname selecting the controller's pods", anti)
	}
	spread := pod.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != corev1.LabelTopologyZone || spread[0].MaxSkew != 1 ||
		spread[0].WhenUnsatisfiable != corev1.DoNotSchedule || !equality.Semantic.DeepEqual(spread[0].LabelSelector.MatchLabels, selector) {
		t.Errorf("topology spread %+v, want zones, maxSkew 1, DoNotSchedule, selecting the controller's pods", spread)
	}
}

func TestUnknownKeysFail(t *testing.T) {
	for _, set := range []string{
		"settings.clusterNmae=demo",          // typo in a setting
		"replica=3",                          // typo at the top level
		"controller.resource.requests.cpu=1", // typo in the controller block
		"settings.featureGates.nodeRepiar=true",
		"serviceAccount.annotation.x=y",
		"podDisruptionBudget.minAvailable=1",
	} {
		t.Run(set, func(t *testing.T) {
			_, err := chart.Render(chart.Dir("lathe"), chart.Options{Release: "lathe", Namespace: namespace, Set: []string{set}})
			if err == nil || !strings.Contains(err.Error(), "additional properties") {
				t.Fatalf("want a schema error naming the unknown key, got %v", err)
			}
		})
	}
}

// TestKarpenterKeysLatheIgnoresAreAccepted: keys of Karpenter's chart that Lathe does not act on still render.
func TestKarpenterKeysLatheIgnoresAreAccepted(t *testing.T) {
	r := render(t, "lathe", chart.Options{Set: []string{"settings.awsFeatureGates.nodeClassCEL=true", "settings.featureGates.reservedCapacity=false"}})
	if d := deployment(t, r.Objects); strings.Contains(envByName(t, d)["FEATURE_GATES"].Value, "NodeClassCEL") {
		t.Errorf("FEATURE_GATES %q must not carry the ignored AWS gate", envByName(t, d)["FEATURE_GATES"].Value)
	}
}

// TestServiceAccountAnnotationForIRSA uses the --set flag of charts/lathe/README.md.
func TestServiceAccountAnnotationForIRSA(t *testing.T) {
	const arn = "arn:aws:iam::111122223333:role/LatheController"
	r := render(t, "lathe", chart.Options{Set: []string{`serviceAccount.annotations.eks\.amazonaws\.com/role-arn=` + arn}})
	if got := find(t, r.Objects, "ServiceAccount").GetAnnotations()["eks.amazonaws.com/role-arn"]; got != arn {
		t.Errorf("ServiceAccount role-arn annotation %q, want %q", got, arn)
	}
}
