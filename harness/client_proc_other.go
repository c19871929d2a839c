//go:build !unix

package harness

import "os/exec"

// ownGroup: no process groups here; the command alone is killed.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
