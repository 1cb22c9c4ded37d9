package catalog

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// File is the catalog file format (YAML or JSON). It can express any catalog:
//
//	instanceTypes:
//	- name: m5.large
//	  capacity: {cpu: "2", memory: 8Gi, pods: "29", ephemeral-storage: 20Gi}
//	  overhead:
//	    kubeReserved: {cpu: 70m, memory: 1289Mi}
//	    evictionThreshold: {ephemeral-storage: 3Gi}
//	  labels: {kubernetes.io/arch: amd64, karpenter.k8s.aws/instance-family: m5}
//	  requirements:            # optional, for labels with several values
//	  - {key: kubernetes.io/os, operator: In, values: [linux, windows]}
//	  offerings:
//	  - {zone: us-east-1a, capacityType: on-demand, price: 0.096}
//	  - {zone: us-east-1a, capacityType: spot, price: 0.0336, available: false}
//
// The instance-type label is set from the name, and zone and capacity-type requirements are derived from the
// offerings. An offering is available unless it says otherwise.
type File struct {
	InstanceTypes []FileInstanceType `json:"instanceTypes"`
}

// FileInstanceType is one instance type in a catalog file.
type FileInstanceType struct {
	Name         string                           `json:"name"`
	Capacity     corev1.ResourceList              `json:"capacity"`
	Overhead     FileOverhead                     `json:"overhead,omitempty"`
	Labels       map[string]string                `json:"labels,omitempty"`
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	Offerings    []FileOffering                   `json:"offerings"`
}

// FileOverhead is the overhead of a type in a catalog file.
type FileOverhead struct {
	KubeReserved      corev1.ResourceList `json:"kubeReserved,omitempty"`
	SystemReserved    corev1.ResourceList `json:"systemReserved,omitempty"`
	EvictionThreshold corev1.ResourceList `json:"evictionThreshold,omitempty"`
}

// FileOffering is one offering in a catalog file.
type FileOffering struct {
	Zone          string  `json:"zone"`
	CapacityType  string  `json:"capacityType"`
	Price         float64 `json:"price"`
	Available     *bool   `json:"available,omitempty"`
	ReservationID string  `json:"reservationID,omitempty"`
}

// Load reads a catalog file and returns its instance types in file order.
func Load(r io.Reader) (cloudprovider.InstanceTypes, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading catalog, %w", err)
	}
	var file File
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		return nil, fmt.Errorf("decoding catalog, %w", err)
	}
	return file.InstanceTypesList()
}

// InstanceTypesList validates the file and converts it to instance types.
func (f File) InstanceTypesList() (cloudprovider.InstanceTypes, error) {
	seen := map[string]bool{}
	out := make(cloudprovider.InstanceTypes, 0, len(f.InstanceTypes))
	for i, fit := range f.InstanceTypes {
		if fit.Name == "" {
			return nil, fmt.Errorf("instance type %d has no name", i)
		}
		if seen[fit.Name] {
			return nil, fmt.Errorf("instance type %q appears twice", fit.Name)
		}
		seen[fit.Name] = true
		if len(fit.Offerings) == 0 {
			return nil, fmt.Errorf("instance type %q has no offerings", fit.Name)
		}
		reqs, err := scheduling.FromNodeSelectorRequirements(fit.Requirements)
		if err != nil {
			return nil, fmt.Errorf("instance type %q, %w", fit.Name, err)
		}
		reqs = reqs.Intersection(scheduling.FromLabels(fit.Labels))
		reqs.Add(scheduling.MustRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, fit.Name))
		var offerings cloudprovider.Offerings
		for j, fo := range fit.Offerings {
			if fo.Zone == "" || fo.CapacityType == "" || fo.Price < 0 {
				return nil, fmt.Errorf("instance type %q offering %d needs a zone, a capacity type and a non-negative price", fit.Name, j)
			}
			offerings = append(offerings, cloudprovider.Offering{
				Zone: fo.Zone, CapacityType: fo.CapacityType, Price: fo.Price,
				Available: fo.Available == nil || *fo.Available, Reservation: fileReservation(fo.ReservationID),
			})
		}
		out = append(out, &cloudprovider.InstanceType{
			Name:         fit.Name,
			Requirements: withOfferingRequirements(reqs, offerings),
			Offerings:    offerings,
			Capacity:     fit.Capacity,
			Overhead: cloudprovider.InstanceTypeOverhead{
				KubeReserved: fit.Overhead.KubeReserved, SystemReserved: fit.Overhead.SystemReserved,
				EvictionThreshold: fit.Overhead.EvictionThreshold,
			},
		})
	}
	return out, nil
}

// ToFile converts instance types to the file format, so that any catalog (EC2, benchmark) can be written out
// and edited. Types keep their order. Single-valued requirements become labels and multi-valued ones requirements; zone and
// capacity type are left to the offerings.
func ToFile(its cloudprovider.InstanceTypes) File {
	var f File
	for _, it := range its {
		fit := FileInstanceType{
			Name:     it.Name,
			Capacity: it.Capacity,
			Overhead: FileOverhead{KubeReserved: it.Overhead.KubeReserved, SystemReserved: it.Overhead.SystemReserved, EvictionThreshold: it.Overhead.EvictionThreshold},
			Labels:   map[string]string{},
		}
		for _, k := range it.Requirements.Keys() {
			if k == v1.LabelTopologyZone || k == v1.CapacityTypeLabelKey || k == v1.LabelInstanceType {
				continue
			}
			r := it.Requirements[k]
			if v, ok := it.Requirements.Labels()[k]; ok {
				fit.Labels[k] = v
				continue
			}
			for _, nsr := range r.NodeSelectorRequirements() {
				fit.Requirements = append(fit.Requirements, corev1.NodeSelectorRequirement{Key: nsr.Key, Operator: nsr.Operator, Values: nsr.Values})
			}
		}
		for _, o := range it.Offerings {
			available := o.Available
			fit.Offerings = append(fit.Offerings, FileOffering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: &available, ReservationID: o.ReservationID()})
		}
		f.InstanceTypes = append(f.InstanceTypes, fit)
	}
	return f
}

// fileReservation is the reservation a catalog file's offering names (nil for none).
func fileReservation(id string) *cloudprovider.Reservation {
	if id == "" {
		return nil
	}
	return &cloudprovider.Reservation{ID: id}
}
