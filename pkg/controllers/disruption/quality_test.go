package disruption_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	ec2catalog "github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// qualityCluster is a simulated cluster consolidation acts on: nodes with their bound pods, the tutorial's
// NodePool and the EC2 catalog.
type qualityCluster struct {
	pool  *v1.NodePool
	types cloudprovider.InstanceTypes
	nodes []*state.StateNode
	seq   int
}

func tutorialPool() *v1.NodePool {
	p := workload.NodePool()
	p.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
	}
	p.Spec.Disruption = v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("0s"), ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		Budgets: []v1.Budget{{Nodes: "100%"}}}
	return p
}

func (q *qualityCluster) input(pods []*corev1.Pod) solver.Input {
	in := solver.Input{Pods: pods, NodePools: []*v1.NodePool{q.pool}, InstanceTypes: map[string]cloudprovider.InstanceTypes{q.pool.Name: q.types}}
	for _, n := range q.nodes {
		in.Nodes = append(in.Nodes, solver.ExistingNode{Node: n.Node, Pods: n.Pods})
	}
	return in
}

// place solves the pods onto the cluster, launching what the plan asks for, and binds them.
func (q *qualityCluster) place(tb testing.TB, pods []*corev1.Pod) {
	tb.Helper()
	plan, err := solver.Solve(context.Background(), q.input(pods), solver.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if len(plan.Unschedulable) > 0 {
		tb.Fatalf("%d pods unschedulable, first %s: %v", len(plan.Unschedulable), plan.Unschedulable[0].Pod, plan.Unschedulable[0].Reasons)
	}
	byRef := map[solver.PodRef]*corev1.Pod{}
	for _, p := range pods {
		byRef[solver.PodRef{Namespace: p.Namespace, Name: p.Name}] = p
	}
	byName := map[string]*state.StateNode{}
	for _, n := range q.nodes {
		byName[n.Node.Name] = n
	}
	for _, nc := range plan.NodeClaims {
		n := q.launch(nc)
		byName[nc.Name] = n
		for _, r := range nc.Pods {
			bind(n, byRef[r])
		}
	}
	for _, pl := range plan.Placements {
		bind(byName[pl.Target], byRef[pl.Pod])
	}
}

// launch adds a node of the claim's cheapest type, zone and capacity type; it is named after the claim.
func (q *qualityCluster) launch(nc solver.NodeClaimPlan) *state.StateNode {
	q.seq++
	it := nc.InstanceTypes[0]
	name := fmt.Sprintf("node-%04d", q.seq)
	labels := it.Requirements.Labels()
	labels[v1.LabelTopologyZone], labels[v1.CapacityTypeLabelKey] = nc.Zone, nc.CapacityType
	labels[v1.NodePoolLabelKey], labels[v1.LabelHostname] = q.pool.Name, name
	alloc := it.Allocatable()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, UID: types.UID(name)},
		Spec:       corev1.NodeSpec{ProviderID: "fake:///" + name},
		Status: corev1.NodeStatus{Capacity: it.Capacity, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(now)},
		Status: v1.NodeClaimStatus{NodeName: name, ProviderID: n.Spec.ProviderID, Conditions: []metav1.Condition{
			{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue},
			{Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue},
		}},
	}
	sn := &state.StateNode{ProviderID: n.Spec.ProviderID, Node: n, NodeClaim: claim, NodePool: q.pool.Name,
		Labels: labels, Allocatable: alloc, Capacity: it.Capacity, Requested: corev1.ResourceList{}}
	q.nodes = append(q.nodes, sn)
	return sn
}

func bind(n *state.StateNode, p *corev1.Pod) {
	p.Spec.NodeName = n.Node.Name
	p.Status.Phase = corev1.PodRunning
	n.Pods = append(n.Pods, p)
	scheduling.AddResources(n.Requested, scheduling.PodRequests(p))
}

// keepEvery deletes all pods but every k-th, and empties nothing else.
func (q *qualityCluster) keepEvery(k int) []*corev1.Pod {
	var kept []*corev1.Pod
	i := 0
	for _, n := range q.nodes {
		var stay []*corev1.Pod
		n.Requested = corev1.ResourceList{}
		for _, p := range n.Pods {
			if i%k == 0 {
				stay = append(stay, p)
				scheduling.AddResources(n.Requested, scheduling.PodRequests(p))
			}
			i++
		}
		n.Pods = stay
		kept = append(kept, stay...)
	}
	return kept
}

func (q *qualityCluster) view() *disruption.View {
	return &disruption.View{
		Snapshot:        &state.Snapshot{Nodes: q.nodes},
		NodePools:       map[string]*v1.NodePool{q.pool.Name: q.pool},
		InstanceTypes:   map[string]cloudprovider.InstanceTypes{q.pool.Name: q.types},
		LaunchablePools: []*v1.NodePool{q.pool},
		Now:             now,
	}
}

// apply carries out a command as the cluster would: the candidates go, the replacements join, and the
// displaced pods are scheduled again.
func (q *qualityCluster) apply(tb testing.TB, cmd disruption.Command) {
	gone := map[string]bool{}
	var displaced []*corev1.Pod
	for _, c := range cmd.Candidates {
		gone[c.Name()] = true
		displaced = append(displaced, c.ReschedulablePods...)
	}
	var rest []*state.StateNode
	for _, n := range q.nodes {
		if !gone[n.Node.Name] {
			rest = append(rest, n)
		}
	}
	q.nodes = rest
	for _, r := range cmd.Replacements {
		q.launch(r)
	}
	for _, p := range displaced {
		p.Spec.NodeName = ""
	}
	q.place(tb, displaced)
}

// consolidate decides and applies commands until a pass decides nothing (or after most commands), and
// returns the commands and the nodes they disrupted.
func (q *qualityCluster) consolidate(tb testing.TB, most int) (commands, disrupted int) {
	for ; commands < most; commands++ {
		out, err := disruption.Decide(context.Background(), q.view(), disruption.Methods(false, solver.Options{}))
		if err != nil {
			tb.Fatal(err)
		}
		d := out.Decided()
		if d == nil {
			break
		}
		disrupted += len(d.Command.Candidates)
		q.apply(tb, d.Command)
	}
	return commands, disrupted
}

func (q *qualityCluster) cost() float64 {
	total := 0.0
	for _, n := range q.nodes {
		for _, it := range q.types {
			if it.Name != n.Labels[v1.LabelInstanceType] {
				continue
			}
			for _, o := range it.Offerings {
				if o.Zone == n.Labels[v1.LabelTopologyZone] && o.CapacityType == n.Labels[v1.CapacityTypeLabelKey] {
					total += o.Price
				}
			}
		}
	}
	return total
}

// BenchmarkConsolidationQuality scales Karpenter's diverse pod mix from N pods to N/4 on the tutorial's
// NodePool and the EC2 catalog, lets consolidation run until it decides nothing more, and compares the
// cluster's cost with a fresh plan for the remaining pods (cost-ratio; the goal is ≤ 1.10). It reports
// the commands and nodes disrupted on the way. One op is the whole scenario.
func BenchmarkConsolidationQuality(b *testing.B) {
	its, err := ec2catalog.EC2(ec2catalog.EC2Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{400, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			for range b.N {
				q := &qualityCluster{pool: tutorialPool(), types: its}
				q.place(b, workload.Diverse(n))
				before := q.cost()
				kept := q.keepEvery(4)
				scaledDown := q.cost()
				commands, disrupted := q.consolidate(b, 100)
				fresh := &qualityCluster{pool: tutorialPool(), types: its}
				for _, p := range kept {
					p.Spec.NodeName = ""
				}
				plan, err := solver.Solve(context.Background(), fresh.input(kept), solver.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(before, "$/h-at-N")
				b.ReportMetric(scaledDown, "$/h-before")
				b.ReportMetric(q.cost(), "$/h-after")
				b.ReportMetric(plan.PricePerHour, "$/h-fresh")
				b.ReportMetric(q.cost()/plan.PricePerHour, "cost-ratio")
				b.ReportMetric(float64(commands), "commands")
				b.ReportMetric(float64(disrupted), "nodes-disrupted")
			}
		})
	}
}

// BenchmarkConsolidationRounds runs Karpenter's consolidation scale scenario (BenchmarkConsolidationDecision's
// nodes: 16 vCPU at 34 % cpu use, ten pods each) with a 100 % budget until consolidation decides nothing
// more, applying each command as the cluster would. It reports the commands it took (the goal:
// the final node count in ≤ 3 decisions) and the nodes left. One op is the whole run.
func BenchmarkConsolidationRounds(b *testing.B) {
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			cpuBefore := cpuTime()
			for range b.N {
				b.StopTimer()
				v := benchmarkView(n)
				p := v.NodePools["default"]
				p.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
				q := &qualityCluster{pool: p, types: v.InstanceTypes["default"], nodes: v.Snapshot.Nodes}
				before := q.cost()
				b.StartTimer()
				commands, _ := q.consolidate(b, 50)
				b.ReportMetric(float64(commands), "commands")
				b.ReportMetric(float64(len(q.nodes)), "nodes-left")
				b.ReportMetric(before, "$/h-before")
				b.ReportMetric(q.cost(), "$/h-after")
			}
			b.ReportMetric((cpuTime()-cpuBefore).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
