package simulate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Main runs the command with args (not including "simulate") and returns the process exit code: 0 on success
// or -h, 2 for bad arguments, 1 for any other failure (the message goes to stderr). Both binaries that offer
// the command call it: `lathe simulate` and the lean `lathe-simulate`.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	deferFirstCollection()
	err := Run(context.Background(), args, stdin, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "lathe simulate: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "lathe simulate: %v\n", err)
	return 1
}
