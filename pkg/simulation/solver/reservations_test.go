package solver_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

const reservationLabel = "karpenter.k8s.aws/capacity-reservation-id"

// withReservation gives the catalog's type a nearly free reserved offering in zone-a with the slots, as the
// AWS provider does for a capacity reservation.
func withReservation(its cloudprovider.InstanceTypes, name, id string, slots int) cloudprovider.InstanceTypes {
	out := slices.Clone(its)
	for i, it := range out {
		if it.Name != name {
			continue
		}
		c := *it
		c.Offerings = append(slices.Clone(it.Offerings), cloudprovider.Offering{Zone: "zone-a", CapacityType: v1.CapacityTypeReserved,
			Price: 1e-7, Available: slots > 0, Reservation: &cloudprovider.Reservation{ID: id, Capacity: slots, Labels: map[string]string{reservationLabel: id}}})
		c.Requirements = it.Requirements.Clone()
		c.Requirements[v1.CapacityTypeLabelKey] = scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn,
			v1.CapacityTypeOnDemand, v1.CapacityTypeSpot, v1.CapacityTypeReserved)
		c.Requirements[reservationLabel] = scheduling.MustRequirement(reservationLabel, corev1.NodeSelectorOpIn, id)
		out[i] = &c
	}
	return out
}

// reservedInput is n pods of 3 cpu (one per c-4) with c-4 reserved for two nodes.
func reservedInput(n int, mutate ...func(*corev1.Pod)) solver.Input {
	in := input(pods(n, "p", "3", "1Gi", mutate...), nodePool("default"))
	in.InstanceTypes["default"] = withReservation(in.InstanceTypes["default"], "c-4", "cr-1", 2)
	return in
}

func claimsBy(plan *solver.Plan, capacityType string) []solver.NodeClaimPlan {
	var out []solver.NodeClaimPlan
	for _, nc := range plan.NodeClaims {
		if nc.CapacityType == capacityType {
			out = append(out, nc)
		}
	}
	return out
}

func requirementValues(nc solver.NodeClaimPlan, key string) []string {
	for _, r := range nc.Requirements {
		if r.Key == key {
			return r.Values
		}
	}
	return nil
}

func TestReservedClaimsNeverExceedTheReservationsSlots(t *testing.T) {
	plan := solveChecked(t, reservedInput(5), solver.Options{})
	reserved := claimsBy(plan, v1.CapacityTypeReserved)
	if len(reserved) != 2 || len(plan.NodeClaims) != 5 || len(plan.Unschedulable) != 0 {
		t.Fatalf("claims %d (reserved %d), unschedulable %v; want 5 with 2 reserved", len(plan.NodeClaims), len(reserved), reasonsOf(plan))
	}
	for _, nc := range reserved {
		if ct := requirementValues(nc, v1.CapacityTypeLabelKey); !slices.Equal(ct, []string{v1.CapacityTypeReserved}) {
			t.Errorf("reserved claim capacity types %v", ct)
		}
		if ids := requirementValues(nc, reservationLabel); !slices.Equal(ids, []string{"cr-1"}) {
			t.Errorf("reserved claim reservation %v, want cr-1", ids)
		}
		if !slices.Equal(nc.InstanceTypeNames, []string{"c-4"}) || nc.Zone != "zone-a" {
			t.Errorf("reserved claim types %v in %s", nc.InstanceTypeNames, nc.Zone)
		}
	}
	for _, nc := range plan.NodeClaims {
		if nc.CapacityType == v1.CapacityTypeReserved {
			continue
		}
		if ct := requirementValues(nc, v1.CapacityTypeLabelKey); slices.Contains(ct, v1.CapacityTypeReserved) || len(ct) == 0 {
			t.Errorf("fallback claim (%s) capacity types %v, want reserved excluded", nc.CapacityType, ct)
		}
		if nc.CapacityType != v1.CapacityTypeSpot {
			t.Errorf("fallback claim capacity type %s, want the cheapest other (spot)", nc.CapacityType)
		}
	}
}

func TestPodsThatRequireReservedCapacityWaitForASlot(t *testing.T) {
	onlyReserved := func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeReserved}
	}
	plan := solveChecked(t, reservedInput(3, onlyReserved), solver.Options{})
	if len(plan.NodeClaims) != 2 || len(claimsBy(plan, v1.CapacityTypeReserved)) != 2 {
		t.Fatalf("claims %+v, want 2 reserved", plan.NodeClaims)
	}
	if len(plan.Unschedulable) != 1 || !slices.ContainsFunc(reasonsOf(plan), func(r string) bool { return r == "no capacity reservation the pods can use has a slot left" }) {
		t.Fatalf("unschedulable %v, want one pod waiting for a reservation slot", reasonsOf(plan))
	}
}

func TestWithoutReservedOfferingsPlansAreUnchanged(t *testing.T) {
	plan := solveChecked(t, input(pods(5, "p", "3", "1Gi"), nodePool("default")), solver.Options{})
	if len(claimsBy(plan, v1.CapacityTypeReserved)) != 0 || len(plan.NodeClaims) == 0 || len(plan.Unschedulable) != 0 {
		t.Fatalf("claims %+v", plan.NodeClaims)
	}
	for _, nc := range plan.NodeClaims {
		if requirementValues(nc, reservationLabel) != nil {
			t.Fatalf("claim %s names a reservation", nc.Name)
		}
	}
}
