// Command lathe runs the Lathe node autoscaler. Settings come from Karpenter's environment variables or from
// the equivalent flags; run "lathe --help" for the list.
//
// "lathe --version" prints the version and commit the binary was built from (make build and make release
// stamp them) and exits.
//
// Exit codes: 0 after a clean shutdown (SIGINT or SIGTERM), --help or --version, 1 when the operator fails, 2 when the
// settings are invalid.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lathe-autoscaler/lathe/cmd/lathe/simulate"
	"github.com/lathe-autoscaler/lathe/pkg/controllers"
	"github.com/lathe-autoscaler/lathe/pkg/operator"
	"github.com/lathe-autoscaler/lathe/pkg/operator/logging"
	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
)

// Set at build time: go build -ldflags "-X main.version=v1.2.3 -X main.commit=abc123".
var (
	version = "dev"
	commit  = ""
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "simulate" {
		// The same command as the lean lathe-simulate binary, which starts faster: it does not link the
		// operator.
		os.Exit(simulate.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run wires settings, logger and operator together and returns the process exit code.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintf(stdout, "lathe %s commit %s %s %s/%s\n", version, orUnknown(commit), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	}
	opts, err := options.Parse(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		if err := options.Usage(stdout); err != nil {
			fmt.Fprintf(stderr, "lathe: %v\n", err)
			return 1
		}
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lathe: invalid settings:\n%v\nRun 'lathe --help' to list the settings.\n", err)
		return 2
	}
	logger, flush, err := logging.New(logging.Config{
		Level:            opts.LogLevel,
		OutputPaths:      opts.LogOutputPaths,
		ErrorOutputPaths: opts.LogErrorOutputPaths,
	})
	if err != nil {
		fmt.Fprintf(stderr, "lathe: creating logger, %v\n", err)
		return 2
	}
	defer func() {
		if err := flush(); err != nil {
			fmt.Fprintf(stderr, "lathe: %v\n", err)
		}
	}()
	// controller-runtime and client-go log through process-wide loggers; point both at ours.
	ctrllog.SetLogger(logger)
	klog.SetLogger(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	op, err := operator.New(opts, operator.Deps{Logger: logger, Version: version, Commit: commit})
	if err != nil {
		logger.Error(err, "creating operator")
		return 1
	}
	if err := controllers.Register(ctx, controllers.Deps{Manager: op.Manager, Registry: op.Registry, Options: opts, Clock: clock.RealClock{}}); err != nil {
		logger.Error(err, "registering controllers")
		return 1
	}
	if err := op.Run(ctx); err != nil {
		logger.Error(err, "running operator")
		return 1
	}
	return 0
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
