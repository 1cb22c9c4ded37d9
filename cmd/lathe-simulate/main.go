// Command lathe-simulate is `lathe simulate` in a binary of its own: the same flags, output and exit codes
// (see package simulate), without the operator linked in. A process of the lathe binary initialises the
// operator's dependencies (client-go's scheme, controller-runtime, Prometheus collectors) and pages in a
// binary three times the size before it reads a flag; this one starts in a fraction of that time, which is
// most of a small simulation's cost.
//
//	lathe-simulate -f workload.yaml -f nodepools.yaml [--catalog catalog.yaml] [-o table|json]
//
// It must import nothing but the simulate command (main_test.go checks its dependencies).
package main

import (
	"os"

	"github.com/lathe-autoscaler/lathe/cmd/lathe/simulate"
)

func main() {
	os.Exit(simulate.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
