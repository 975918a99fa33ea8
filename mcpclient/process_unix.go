//go:build unix

package mcpclient

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// signalGroup sends sig to the process group led by pid. The group id
// cannot be reused while any member lives, so this never hits a stranger.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}

// groupAlive reports whether the process group pgid has a member that is
// not a zombie. On Linux it reads /proc (zombies left to an init that does
// not reap would otherwise look alive forever); elsewhere it asks kill(0).
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: kill(0) said it exists
	}
	want := []byte(strconv.Itoa(pgid))
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) >= 3 && bytes.Equal(f[2], want) && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}

// sysProcAttr puts the server in its own process group, so the close
// sequence reaches its children too. (Pdeathsig is deliberately not used:
// Linux sends it when the forking OS thread exits, which the Go runtime
// may do while odek is alive.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
