package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names of the cloud provider metrics (upstream's).
const (
	methodLabel   = "method"
	providerLabel = "provider"
	errorLabel    = "error"
	subsystem     = "cloudprovider"
)

// Collectors are the cloud provider metrics; every decorated provider shares one set.
type Collectors struct {
	duration  *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	cpu       *prometheus.GaugeVec
	memory    *prometheus.GaugeVec
	available *prometheus.GaugeVec
	price     *prometheus.GaugeVec
}

// NewCollectors creates the cloud provider metrics and registers them on reg.
func NewCollectors(reg prometheus.Registerer) *Collectors {
	offering := []string{metrics.InstanceTypeLabel, metrics.CapacityTypeLabel, metrics.ZoneLabel}
	return &Collectors{
		// Upstream leaves the buckets at Prometheus' defaults.
		duration: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "duration_seconds",
			Help: "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
		}, metrics.ControllerLabel, methodLabel, providerLabel),
		errors: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "errors_total",
			Help: "Total number of errors returned from CloudProvider calls.",
		}, metrics.ControllerLabel, methodLabel, providerLabel, errorLabel),
		cpu: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_cpu_cores",
			Help: "VCPUs cores for a given instance type.",
		}, metrics.InstanceTypeLabel),
		memory: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_memory_bytes",
			Help: "Memory, in bytes, for a given instance type.",
		}, metrics.InstanceTypeLabel),
		available: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_offering_available",
			Help: "Instance type offering availability, based on instance type, capacity type, and zone",
		}, offering...),
		price: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_offering_price_estimate",
			Help: "Instance type offering estimated hourly price used when making informed decisions on node cost calculation, based on instance type, capacity type, and zone.",
		}, offering...),
	}
}

// instanceTypes sets the instance type gauges from a GetInstanceTypes result.
func (c *Collectors) instanceTypes(types []*cloudprovider.InstanceType) {
	for _, it := range types {
		if cpu, ok := it.Capacity[corev1.ResourceCPU]; ok {
			c.cpu.WithLabelValues(it.Name).Set(cpu.AsApproximateFloat64())
		}
		if mem, ok := it.Capacity[corev1.ResourceMemory]; ok {
			c.memory.WithLabelValues(it.Name).Set(mem.AsApproximateFloat64())
		}
		for _, o := range it.Offerings {
			c.available.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(boolValue(o.Available))
			c.price.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(o.Price)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
