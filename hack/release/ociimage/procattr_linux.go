package ociimage

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd when the process that started it dies (a test binary killed by
// its timeout, a Ctrl-C'd release), so no compile outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
