package chart_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
	"github.com/lathe-autoscaler/lathe/pkg/test/chart"
)

// TestLatheParsesTheChartsSettings feeds the environment the rendered Deployment gives the controller to
// Lathe's own option parser: every variable the chart sets is one Lathe reads, and the values parse into
// what the chart was given.
func TestLatheParsesTheChartsSettings(t *testing.T) {
	var usage strings.Builder
	if err := options.Usage(&usage); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"KUBERNETES_MIN_VERSION": true} // set as Karpenter's chart sets it; no program reads it
	for _, m := range regexp.MustCompile(`, ([A-Z0-9_]+) \(default`).FindAllStringSubmatch(usage.String(), -1) {
		known[m[1]] = true
	}
	tests := []struct {
		name  string
		opts  chart.Options
		check func(t *testing.T, o *options.Options)
	}{
		{name: "getting started flags", opts: chart.Options{Set: gettingStarted}, check: func(t *testing.T, o *options.Options) {
			if o.ClusterName != "demo" || o.InterruptionQueue != "demo" || o.CPURequests != 1000 || o.MemoryLimit != 1<<30 || o.CloudProvider != "aws" {
				t.Errorf("cluster %q queue %q cpu %d memory %d provider %q", o.ClusterName, o.InterruptionQueue, o.CPURequests, o.MemoryLimit, o.CloudProvider)
			}
			if o.SystemNamespace != namespace || o.LeaderElectionNamespace != namespace || o.MetricsPort != 8080 || o.HealthProbePort != 8081 {
				t.Errorf("namespace %q lease namespace %q ports %d/%d", o.SystemNamespace, o.LeaderElectionNamespace, o.MetricsPort, o.HealthProbePort)
			}
		}},
		{name: "karpenter values.yaml", opts: chart.Options{ValuesFiles: []string{karpenterValues}, Set: []string{"settings.clusterName=demo"}}, check: func(t *testing.T, o *options.Options) {
			if o.BatchMaxDuration != 10*time.Second || o.BatchIdleDuration != time.Second || o.VMMemoryOverheadPercent != 0.075 || !o.FeatureGates.ReservedCapacity {
				t.Errorf("options %+v, want Karpenter's defaults", o)
			}
		}},
		{name: "every option", opts: chart.Options{Values: everyOption()}, check: func(t *testing.T, o *options.Options) {
			g := o.FeatureGates
			if o.ClusterEndpoint != "https://example.eks.amazonaws.com" || !o.IsolatedVPC || o.VMMemoryOverheadPercent != 0.1 || o.BatchMaxDuration != 20*time.Second ||
				o.LogLevel != "debug" || o.CloudProvider != "sim" || o.NominatedNodeName != "false" || o.PlanUntriedPods || o.KubeClientQPS != 50 || o.MetricsPort != 9090 ||
				!g.NodeRepair || g.ReservedCapacity || !g.SpotToSpotConsolidation || !g.StaticCapacity {
				t.Errorf("options %+v", o)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := deployment(t, render(t, "lathe", tc.opts).Objects)
			env := podEnv(t, d)
			for name := range env {
				if !known[name] {
					t.Errorf("the chart sets %s, which Lathe does not read", name)
				}
			}
			o, err := options.Parse(nil, func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("Lathe refuses the chart's settings: %v", err)
			}
			tc.check(t, o)
		})
	}
}

// podEnv is the controller's environment as the kubelet would give it: literal values, the pod's namespace,
// and the resource fields from the container's resources (only requests.cpu in millicores and limits.memory
// in bytes are used).
func podEnv(t *testing.T, d *appsv1.Deployment) map[string]string {
	t.Helper()
	c := container(t, d)
	out := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			out[e.Name] = d.Namespace
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "requests.cpu":
			if q, ok := c.Resources.Requests["cpu"]; ok {
				out[e.Name] = strconv.FormatInt(q.MilliValue(), 10)
			}
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			if q, ok := c.Resources.Limits["memory"]; ok {
				out[e.Name] = strconv.FormatInt(q.Value(), 10)
			}
		default:
			t.Fatalf("env %s: unexpected valueFrom %+v", e.Name, e.ValueFrom)
		}
	}
	return out
}
