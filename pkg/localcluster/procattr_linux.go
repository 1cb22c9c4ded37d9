package localcluster

import "syscall"

// sysProcAttr puts a child in its own process group, so Stop can signal everything it started, and has
// the kernel kill it if the thread that started it dies, so a crashed launcher leaves no cluster behind.
// The Go runtime ends a thread only when a goroutine locked to it returns without unlocking, which
// nothing in the launcher does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
