package runenv

import (
	"os/exec"
	"syscall"
)

// Hold makes cmd, a process that writes into the run directory (a `go
// build` with its GOTMPDIR there), part of the run: it gets SIGKILL when
// this process dies, and it and every process it starts inherit the
// marker's open lock, so the reaper leaves the directory alone until the
// last of them is gone (a compiler started by a killed `go build` may
// still be writing its output). Call it before cmd.Start.
func (r *Run) Hold(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	// The descriptor is not close-on-exec in the child, so its children
	// inherit it in turn.
	cmd.ExtraFiles = append(cmd.ExtraFiles, r.lock)
}
