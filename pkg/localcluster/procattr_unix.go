//go:build unix && !linux

package localcluster

import "syscall"

// sysProcAttr puts a child in its own process group, so Stop can signal everything it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
