package simulate

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// fileList is a repeatable -f flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// ErrUsage is returned (wrapped) for bad arguments; the caller should exit with status 2.
var ErrUsage = errors.New("usage")

// Run executes `lathe simulate` with args (not including "simulate"). It reads manifests from the -f files
// (or stdin for "-"), writes the result to stdout and diagnostics to stderr.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files fileList
	fs.Var(&files, "f", "manifest file to read (repeatable; - for stdin)")
	catalogFile := fs.String("catalog", "", "instance-type catalog file (default: embedded EC2, us-east-1 on-demand, 3 zones)")
	output := fs.String("o", "table", "output format: table or json")
	preferences := fs.String("preference-policy", string(solver.PreferenceRespect), "Respect or Ignore pod preferences")
	minValues := fs.String("min-values-policy", string(scheduling.MinValuesStrict), "Strict or BestEffort")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: lathe simulate -f FILE [-f FILE ...] [--catalog FILE] [-o table|json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	validPreference := *preferences == string(solver.PreferenceRespect) || *preferences == string(solver.PreferenceIgnore)
	validMinValues := *minValues == string(scheduling.MinValuesStrict) || *minValues == string(scheduling.MinValuesBestEffort)
	if len(files) == 0 || fs.NArg() > 0 || (*output != "table" && *output != "json") || !validPreference || !validMinValues {
		fs.Usage()
		return fmt.Errorf("%w: need at least one -f, no positional arguments, -o table or json, and valid policies", ErrUsage)
	}
	// The catalog loads while the manifests are read.
	var its cloudprovider.InstanceTypes
	var catalogErr error
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		its, catalogErr = loadCatalog(*catalogFile)
	}()
	objs := &objects{}
	for _, name := range files {
		if err := readFile(objs, name, stdin); err != nil {
			<-loaded
			return err
		}
	}
	<-loaded
	if catalogErr != nil {
		return catalogErr
	}
	in := objs.input(its, *catalogFile == "")
	for _, w := range objs.warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	plan, err := solver.Solve(ctx, in, solver.Options{PreferencePolicy: solver.PreferencePolicy(*preferences), MinValuesPolicy: scheduling.MinValuesPolicy(*minValues)})
	if err != nil {
		return fmt.Errorf("simulating, %w", err)
	}
	// Buffered: the table writer writes cell by cell, a system call each to an unbuffered stdout.
	out := bufio.NewWriter(stdout)
	if *output == "json" {
		err = writeJSON(out, plan)
	} else {
		err = writeTable(out, plan)
	}
	if flushErr := out.Flush(); err == nil && flushErr != nil {
		err = fmt.Errorf("writing output, %w", flushErr)
	}
	return err
}

func readFile(objs *objects, name string, stdin io.Reader) error {
	if name == "-" {
		return objs.read(stdin, "stdin")
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("opening manifest, %w", err)
	}
	defer f.Close()
	return objs.read(f, name)
}

func loadCatalog(path string) (cloudprovider.InstanceTypes, error) {
	if path == "" {
		its, err := catalog.EC2(catalog.EC2Options{CapacityTypes: []string{v1.CapacityTypeOnDemand}})
		if err != nil {
			return nil, fmt.Errorf("loading embedded catalog, %w", err)
		}
		return its, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening catalog, %w", err)
	}
	defer f.Close()
	its, err := catalog.Load(f)
	if err != nil {
		return nil, fmt.Errorf("loading catalog %s, %w", path, err)
	}
	return its, nil
}

// input assembles the solver input: pods with a nodeName known as a Node are bound to it, NodeClaims
// without a Node are in flight, and every NodePool gets the whole catalog. The embedded EC2 catalog is
// shaped by the EC2NodeClass each pool refers to, when the input has it (kubelet settings, root volume),
// as the simulated and AWS providers shape it; a catalog file states its capacities itself.
func (o *objects) input(its cloudprovider.InstanceTypes, embedded bool) solver.Input {
	in := solver.Input{NodePools: o.nodePools, InstanceTypes: map[string]cloudprovider.InstanceTypes{}, DaemonSets: o.daemonSets,
		Volumes: solver.Volumes{Claims: o.claims, Volumes: o.volumes, StorageClasses: o.classes}}
	for _, np := range o.nodePools {
		in.InstanceTypes[np.Name] = its
		if nc := o.nodeClassOf(np); embedded && nc != nil {
			in.InstanceTypes[np.Name] = catalog.ForNodeClass(its, nc)
		}
	}
	nodeIndex := map[string]int{}
	for _, n := range o.nodes {
		nodeIndex[n.Name] = len(in.Nodes)
		in.Nodes = append(in.Nodes, solver.ExistingNode{Node: n})
	}
	claimIndex := map[string]int{}
	for _, nc := range o.nodeClaims {
		if _, isNode := nodeIndex[nc.Status.NodeName]; isNode && nc.Status.NodeName != "" {
			continue
		}
		claimIndex[nc.Name] = len(in.InFlight)
		in.InFlight = append(in.InFlight, solver.InFlightNodeClaim{NodeClaim: nc})
	}
	for _, p := range o.pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if i, ok := nodeIndex[p.Spec.NodeName]; ok {
			in.Nodes[i].Pods = append(in.Nodes[i].Pods, p)
			continue
		}
		if i, ok := claimIndex[p.Spec.NodeName]; ok {
			in.InFlight[i].Pods = append(in.InFlight[i].Pods, p)
			continue
		}
		in.Pods = append(in.Pods, p)
	}
	return in
}

// warnings point out inputs the simulation can't use as the user may expect.
func (o *objects) warnings() []string {
	var out []string
	if len(o.nodePools) == 0 {
		out = append(out, "no NodePools in the input: only existing nodes can take pods")
	}
	classes := map[string]bool{}
	for _, nc := range o.nodeClasses {
		classes[nc.Name] = true
	}
	for _, np := range o.nodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if len(o.nodeClasses) > 0 && ref != nil && ref.Kind == "EC2NodeClass" && !classes[ref.Name] {
			out = append(out, fmt.Sprintf("nodepool %s refers to EC2NodeClass %q, which is not in the input", np.Name, ref.Name))
		}
	}
	var kinds []string
	for k := range o.ignoredKinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		out = append(out, fmt.Sprintf("ignored %d %s object(s)", o.ignoredKinds[k], k))
	}
	return out
}

// nodeClassOf returns the EC2NodeClass of the input the pool refers to, or nil.
func (o *objects) nodeClassOf(np *v1.NodePool) *awsv1.EC2NodeClass {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Kind != "EC2NodeClass" {
		return nil
	}
	for _, nc := range o.nodeClasses {
		if nc.Name == ref.Name {
			return nc
		}
	}
	return nil
}
