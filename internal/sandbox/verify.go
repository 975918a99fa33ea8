package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SelfTestArg, as the first argument, makes an odek binary run the
// sandbox's self-test inside a sandbox Verify set up: it must read a file
// in its root, fail to read the file outside and fail to connect to the
// listener, and prints "ok" only then.
const SelfTestArg = "__odek-sandbox-selftest"

// Verify proves the sandbox works on this machine, end to end: it
// confines this binary in a fresh root with the default rules and checks
// from inside that the root is readable while a file next to it and a TCP
// listener on loopback are not; once started by a job's Jail (with the
// default resource limits, so stopped at its exec while they are set),
// once through the re-executed helper (the way of kernels without signal
// scoping). It returns nil only when all of that holds.
func Verify(ctx context.Context) error {
	if err := Missing(ABI()); err != nil {
		return err
	}
	base, err := os.MkdirTemp("", "odek-sandbox-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	root, tmp := filepath.Join(base, "root"), filepath.Join(base, "tmp")
	for _, d := range []string{root, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	inside, outside := filepath.Join(root, "inside"), filepath.Join(base, "outside")
	for _, f := range []string{inside, outside} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	exe, err := executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// The probe's own binary may live outside the system paths (a build
	// directory); grant its directory read-only for this check only.
	s := Settings{ReadOnlyPaths: []string{filepath.Dir(exe)}}
	spec, err := NewSpec(s, Paths{Root: root, TempDir: tmp, Deny: []string{outside}}, Host)
	if err != nil {
		return err
	}
	for _, helper := range []bool{false, true} {
		args := []string{SelfTestArg, inside, outside, ln.Addr().String()}
		var cmd *exec.Cmd
		start := func() error { return cmd.Start() }
		how := "started through the helper"
		if helper {
			if cmd, err = Command(ctx, spec, append([]string{exe}, args...)...); err != nil {
				return err
			}
		} else {
			j, err := NewJail(spec)
			if err != nil {
				return err
			}
			defer j.Close()
			cmd = exec.CommandContext(ctx, exe, args...)
			start = func() error { return j.Start(cmd) }
			how = "started by a job's jail"
		}
		cmd.Dir, cmd.Env = root, Env(spec, os.Environ())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		runErr := start()
		if runErr == nil {
			runErr = cmd.Wait()
		}
		if got := strings.TrimSpace(out.String()); runErr != nil || got != "ok" {
			return fmt.Errorf("confined self-test %s failed (%v): %s", how, runErr, got)
		}
	}
	return nil
}

// selfTest runs inside the sandbox Verify set up; see SelfTestArg.
func selfTest(args []string) int {
	if len(args) != 3 {
		fmt.Println("self-test: want inside, outside and addr")
		return 2
	}
	var problems []string
	if _, err := os.ReadFile(args[0]); err != nil {
		problems = append(problems, "cannot read its own root: "+err.Error())
	}
	if _, err := os.ReadFile(args[1]); !errors.Is(err, os.ErrPermission) {
		problems = append(problems, fmt.Sprintf("reading outside the root was not denied (%v)", err))
	}
	if c, err := net.DialTimeout("tcp", args[2], 2*time.Second); err == nil {
		c.Close()
		problems = append(problems, "a TCP connection to "+args[2]+" was allowed")
	} else if !errors.Is(err, os.ErrPermission) {
		problems = append(problems, fmt.Sprintf("a TCP connection failed for another reason than the sandbox (%v)", err))
	}
	if len(problems) > 0 {
		fmt.Println(strings.Join(problems, "; "))
		return 1
	}
	fmt.Println("ok")
	return 0
}

// Host is the Lister of the real file system, as odek's user sees it.
var Host Lister = hostLister{}

type hostLister struct{}

func (hostLister) Names(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

func (hostLister) Reachable(path string) bool { return reachable(path) }

func (hostLister) Kind(path string) (exists, dir bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	return true, fi.IsDir()
}
