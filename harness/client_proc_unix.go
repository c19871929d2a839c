//go:build unix

package harness

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd as the leader of a process group of its own, so
// that a kill at timeout reaches everything it started.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd's whole process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
