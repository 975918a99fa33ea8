package mcpclient

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// process is one spawned server: its pipes and its process group.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File      // our write end
	stdout io.ReadCloser // our read end (newStdoutPipe)
	stderr *os.File      // our read end

	exited  chan struct{} // closed once Wait returned
	waitErr error         // valid after exited is closed

	stopOnce sync.Once
	stopErr  error
}

// startProcess spawns the server in its own process group with pipes made
// here (not by exec), so Wait never races our reads.
func startProcess(cfg *ServerConfig) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := newStdoutPipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = cfg.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // never inherit odek's environment
	}
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = sysProcAttr()
	if cfg.Start != nil {
		err = cfg.Start(cmd)
	} else {
		err = cmd.Start()
	}
	// The child has its ends (or failed to start); ours go.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: outR, stderr: errR, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// exitStatus describes how the process ended, or "" while it runs.
func (p *process) exitStatus() string {
	select {
	case <-p.exited:
		if p.waitErr == nil {
			return "exit status 0"
		}
		return p.waitErr.Error()
	default:
		return ""
	}
}

// stop runs the close sequence once: close stdin → wait grace for the
// leader to exit → SIGTERM to the group → wait grace for the group to end
// → SIGKILL to the group → wait for the leader. ctx cuts the waits short
// (straight to SIGKILL). It returns when the leader has been reaped; group
// members that outlive SIGKILL cannot exist (it cannot be caught), though
// their zombies may linger until their new parent reaps them.
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.doStop(ctx, grace) })
	return p.stopErr
}

func (p *process) doStop(ctx context.Context, grace time.Duration) error {
	p.stdin.Close()
	if p.waitGroup(ctx, grace) {
		p.closeReads()
		return nil
	}
	signalGroup(p.pid, sigTerm)
	if p.waitGroup(ctx, grace) {
		p.closeReads()
		return nil
	}
	signalGroup(p.pid, sigKill)
	p.closeReads()
	select {
	case <-p.exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("mcpclient: process %d not reaped 5s after SIGKILL", p.pid)
	}
}

// closeReads closes our read ends, which unblocks the reader goroutines
// (a grandchild may hold the write ends open).
func (p *process) closeReads() {
	p.stdout.Close()
	p.stderr.Close()
}

// waitGroup waits until the leader has exited and no live process is left
// in its group, up to d or ctx; it reports whether that happened. The group
// is polled every few milliseconds (a process group cannot be waited for).
func (p *process) waitGroup(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for groupAlive(p.pid) {
		select {
		case <-tick.C:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}
