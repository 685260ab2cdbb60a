//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing here: only Linux has a parent-death signal.
func dieWithParent(*exec.Cmd) {}
