package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// jsonPlan is the -o json document.
type jsonPlan struct {
	TotalPricePerHour float64             `json:"totalPricePerHour"`
	LowerBoundPerHour float64             `json:"lowerBoundPerHour"`
	CostRatio         float64             `json:"costRatio"`
	NodeClaims        []jsonNodeClaim     `json:"nodeClaims"`
	Placements        []solver.Placement  `json:"placements"`
	Unschedulable     []jsonUnschedulable `json:"unschedulable"`
}

type jsonNodeClaim struct {
	Name              string   `json:"name"`
	NodePool          string   `json:"nodePool"`
	InstanceTypes     []string `json:"instanceTypes"`
	Zone              string   `json:"zone"`
	CapacityType      string   `json:"capacityType"`
	PricePerHour      float64  `json:"pricePerHour"`
	Pods              []string `json:"pods"`
	CPUUtilization    float64  `json:"cpuUtilization"`
	MemoryUtilization float64  `json:"memoryUtilization"`
}

type jsonUnschedulable struct {
	Pod     string   `json:"pod"`
	Reasons []string `json:"reasons"`
}

func writeJSON(w io.Writer, plan *solver.Plan) error {
	out := jsonPlan{TotalPricePerHour: plan.PricePerHour, LowerBoundPerHour: plan.LowerBoundPerHour, CostRatio: plan.CostRatio(),
		NodeClaims: []jsonNodeClaim{}, Placements: plan.Placements, Unschedulable: []jsonUnschedulable{}}
	for _, nc := range plan.NodeClaims {
		cpu, mem := utilization(nc)
		j := jsonNodeClaim{Name: nc.Name, NodePool: nc.NodePool, InstanceTypes: nc.InstanceTypeNames, Zone: nc.Zone,
			CapacityType: nc.CapacityType, PricePerHour: nc.PricePerHour, Pods: []string{}, CPUUtilization: cpu, MemoryUtilization: mem}
		for _, p := range nc.Pods {
			j.Pods = append(j.Pods, p.String())
		}
		out.NodeClaims = append(out.NodeClaims, j)
	}
	for _, u := range plan.Unschedulable {
		j := jsonUnschedulable{Pod: u.Pod.String()}
		for _, r := range u.Reasons {
			j.Reasons = append(j.Reasons, r.String())
		}
		out.Unschedulable = append(out.Unschedulable, j)
	}
	// What an indenting json.Encoder writes (json.MarshalIndent and a newline), sized once: the plan of
	// 1,000 pods is 0.7 MB. indentCompact lays it out faster than the encoding/json indenter.
	data, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("writing json, %w", err)
	}
	if _, err := w.Write(append(indentCompact(make([]byte, 0, 2*len(data)), data), '\n')); err != nil {
		return fmt.Errorf("writing json, %w", err)
	}
	return nil
}

// utilization is requested cpu and memory over the allocatable of the claim's cheapest type.
func utilization(nc solver.NodeClaimPlan) (cpu, mem float64) {
	if len(nc.InstanceTypes) == 0 {
		return 0, 0
	}
	alloc := nc.InstanceTypes[0].Allocatable()
	ratio := func(name corev1.ResourceName) float64 {
		have, want := alloc[name], nc.Requests[name]
		if have.IsZero() {
			return 0
		}
		return want.AsApproximateFloat64() / have.AsApproximateFloat64()
	}
	return ratio(corev1.ResourceCPU), ratio(corev1.ResourceMemory)
}

func writeTable(w io.Writer, plan *solver.Plan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODECLAIM\tNODEPOOL\tINSTANCE TYPES (CHEAPEST FIRST)\tZONE\tCAPACITY\t$/H\tPODS\tCPU\tMEMORY")
	for _, nc := range plan.NodeClaims {
		cpu, mem := utilization(nc)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.4f\t%d\t%.0f%%\t%.0f%%\n", nc.Name, nc.NodePool, summarizeTypes(nc.InstanceTypeNames),
			nc.Zone, nc.CapacityType, nc.PricePerHour, len(nc.Pods), 100*cpu, 100*mem)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing table, %w", err)
	}
	if len(plan.Placements) > 0 {
		counts := map[string]int{}
		var order []string
		for _, p := range plan.Placements {
			if counts[p.Target] == 0 {
				order = append(order, p.Target)
			}
			counts[p.Target]++
		}
		fmt.Fprintln(w, "\nPods placed on existing capacity:")
		for _, target := range order {
			fmt.Fprintf(w, "  %s: %d pods\n", target, counts[target])
		}
	}
	if len(plan.Unschedulable) > 0 {
		fmt.Fprintf(w, "\nUnschedulable pods (%d):\n", len(plan.Unschedulable))
		for _, u := range plan.Unschedulable {
			fmt.Fprintf(w, "  %s\n", u.Pod)
			for _, r := range u.Reasons {
				fmt.Fprintf(w, "    - %s\n", r)
			}
		}
	}
	noun := "nodeclaims"
	if len(plan.NodeClaims) == 1 {
		noun = "nodeclaim"
	}
	fmt.Fprintf(w, "\nTotal: %d %s, $%.4f/h; lower bound $%.4f/h (cost/bound %.3f)\n",
		len(plan.NodeClaims), noun, plan.PricePerHour, plan.LowerBoundPerHour, plan.CostRatio())
	return nil
}

func summarizeTypes(names []string) string {
	const shown = 3
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s (+%d)", strings.Join(names[:shown], ", "), len(names)-shown)
}
