package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// measure runs cmd to its end and returns its CPU time (rusage) and its
// own peak resident set: VmHWM of /proc/PID/status, read while the
// process is held at its exit by ptrace (PTRACE_O_TRACEEXIT), after its
// last allocation and before its memory is released.
//
// Not rusage's ru_maxrss: Go starts a child with clone(CLONE_VM|
// CLONE_VFORK), so until exec the child runs in this process's memory,
// and exec records that memory's high-water mark in the child's
// ru_maxrss. A child of loopbench therefore never reports less than
// loopbench's own peak (~14 MiB with its fake model server), whatever
// the child itself holds: an empty Go program "peaked" at 13.8 MiB.
//
// When cmd execs again (a wrapper script), the figure is the last
// program's. cmd's Stdout and Stderr must be nil or *os.File (no copying
// goroutines: the process is reaped here, not by cmd.Wait).
func measure(cmd *exec.Cmd) (usage, error) {
	// ptrace requests must come from the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		return usage{}, err
	}
	defer cmd.Process.Release()
	pid := cmd.Process.Pid
	u := usage{rssMiB: -1}
	first := true
	for {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		if _, err := syscall.Wait4(pid, &ws, 0, &ru); err != nil {
			return usage{}, fmt.Errorf("wait4: %w", err)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			u.user = time.Duration(ru.Utime.Nano())
			u.sys = time.Duration(ru.Stime.Nano())
			if ws.Signaled() || ws.ExitStatus() != 0 {
				return u, fmt.Errorf("%s: %v", cmd.Path, ws)
			}
			return u, nil
		case !ws.Stopped():
			continue
		}
		sig := 0
		switch {
		case first: // the SIGTRAP after exec
			first = false
			// TRACEEXEC: a later exec (a wrapper script's) is an event
			// stop, not a SIGTRAP to deliver.
			if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT|syscall.PTRACE_O_TRACEEXEC); err != nil {
				syscall.Kill(pid, syscall.SIGKILL)
				return usage{}, fmt.Errorf("ptrace: %w", err)
			}
		case ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			u.rssMiB = vmHWM(pid)
		case ws.TrapCause() > 0: // another event (exec)
		default: // a signal for the child: deliver it
			sig = int(ws.StopSignal())
		}
		if err := syscall.PtraceCont(pid, sig); err != nil {
			return usage{}, fmt.Errorf("ptrace: %w", err)
		}
	}
}

// vmHWM is the process's peak resident set in MiB, -1 if unreadable.
func vmHWM(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			kb, err := strconv.Atoi(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))))
			if err == nil {
				return float64(kb) / 1024
			}
		}
	}
	return -1
}
