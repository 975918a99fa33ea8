//go:build !unix

package hooks

import "os/exec"

// newProcessGroup: no process groups here; the hook alone is ended at a
// timeout.
func newProcessGroup(*exec.Cmd) {}

// killProcessGroup ends the hook's process.
func killProcessGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
