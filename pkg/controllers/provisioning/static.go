package provisioning

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// maxStaticInstanceTypes caps the instance types a static NodeClaim may launch as, as for every claim.
const maxStaticInstanceTypes = 60

// StaticNodeClaimPlan is the claim a static NodePool (spec.replicas) launches for each replica: no pods, the
// pool's requirements, and the cheapest instance types they allow (up to 60, cheapest first), so the
// provider launches the cheapest. The static controller creates these to reach the replica count, and
// static drift replaces a drifted node with one.
func StaticNodeClaimPlan(pool *v1.NodePool, its cloudprovider.InstanceTypes) (solver.NodeClaimPlan, error) {
	reqs, err := scheduling.FromNodePoolRequirements(pool.Spec.Template.Spec.Requirements)
	if err != nil {
		return solver.NodeClaimPlan{}, fmt.Errorf("reading nodepool %s's requirements, %w", pool.Name, err)
	}
	var fitting cloudprovider.InstanceTypes
	for _, it := range its.Compatible(reqs).OrderByPrice(reqs) {
		if len(it.Offerings.Available().Compatible(reqs)) > 0 {
			fitting = append(fitting, it)
		}
	}
	if len(fitting) == 0 {
		return solver.NodeClaimPlan{}, fmt.Errorf("no instance type of nodepool %s has an available offering its requirements allow", pool.Name)
	}
	fitting = fitting.Truncate(maxStaticInstanceTypes)
	names := make([]string, len(fitting))
	for i, it := range fitting {
		names[i] = it.Name
	}
	reqs.Add(scheduling.MustRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, names...))
	plan := solver.NodeClaimPlan{
		Name: pool.Name + "-static", NodePool: pool.Name, Requirements: reqs.NodeSelectorRequirements(),
		InstanceTypes: fitting, InstanceTypeNames: names, Requests: corev1.ResourceList{},
	}
	if o, ok := fitting[0].Offerings.Available().Compatible(reqs).Cheapest(); ok {
		plan.Zone, plan.CapacityType, plan.PricePerHour = o.Zone, o.CapacityType, o.Price
	}
	return plan, nil
}
