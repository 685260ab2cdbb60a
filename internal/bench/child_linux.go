package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel SIGKILL the started process when hotkv-bench dies, so that a
// benchmark killed midway (Ctrl-C twice, a CI timeout, SIGKILL) leaves no servers behind
// holding ports and disk. The signal follows the OS thread that forked, not the process: Go
// ends a thread only when a goroutine exits while locked to it, which nothing here does.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
