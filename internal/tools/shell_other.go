//go:build !unix

package tools

import "os/exec"

// killGroupOnCancel: without Unix process groups, cancellation kills the
// shell only (exec's default); a process it started in the background may
// outlive it. WaitDelay still bounds how long its output is waited for.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}
