//go:build !linux

package ociimage

import "os/exec"

// dieWithParent needs Linux's parent-death signal; elsewhere a compile may outlive a killed parent.
func dieWithParent(*exec.Cmd) {}
