//go:build !unix

package main

import "os/exec"

// measure runs cmd; the peak resident set is unknown (-1) where the
// process state carries no rusage.
func measure(cmd *exec.Cmd) (usage, error) {
	if err := cmd.Run(); err != nil {
		return usage{}, err
	}
	return usage{user: cmd.ProcessState.UserTime(), sys: cmd.ProcessState.SystemTime(), rssMiB: -1}, nil
}
