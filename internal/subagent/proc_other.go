//go:build !unix

package subagent

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func killGroup(pid int, exited <-chan error) {
	if exited != nil {
		<-exited
	}
}
