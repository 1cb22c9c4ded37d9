// Command stamped stands in for cmd/lathe in the image builder's tests. The builder treats its package as
// opaque (it cross-compiles it with the stamp in main.version and main.commit and lays the binary out as
// /lathe), so a small main whose --version answers like Lathe's proves the same things as the real binary,
// without two cross-compiles of the whole controller in every test run. make release builds cmd/lathe.
package main

import (
	"fmt"
	// net links the cgo resolver unless CGO_ENABLED=0, as cmd/lathe does: the static-binary test needs it.
	_ "net"
	"os"
	"runtime"
)

// Stamped by the builder through -ldflags -X, as in cmd/lathe.
var (
	version = "dev"
	commit  = ""
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Printf("lathe %s commit %s %s %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return
	}
	fmt.Fprintln(os.Stderr, "usage: stamped --version")
	os.Exit(2)
}
