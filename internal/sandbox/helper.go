package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// HelperArg, as the first argument, makes an odek binary run as the
// sandbox helper: `odek __odek-sandbox-exec <spec JSON> <argv…>` applies
// the spec to itself and then executes argv.
const HelperArg = "__odek-sandbox-exec"

// Exit codes of the helper when it does not reach the command (the
// command's own code otherwise).
const (
	// ExitUsage: the helper was called with a bad spec or no command.
	ExitUsage = 125
	// ExitNotConfined: the sandbox could not be applied, so the command
	// was not run.
	ExitNotConfined = 126
	// ExitNotFound: the command is not on PATH (or not executable inside
	// the sandbox).
	ExitNotFound = 127
)

// Main runs the helper and exits when the process was started as one,
// and returns at once otherwise. Every main that can spawn confined
// commands (odek, odek-bot) calls it first, and so does TestMain of every
// package whose tests run them (os.Executable is the test binary there).
func Main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case HelperArg:
			os.Exit(runHelper(os.Args[2:], os.Stderr))
		case SuperviseArg:
			os.Exit(runSupervisor(os.Args[2:], os.Stderr))
		case SelfTestArg:
			os.Exit(selfTest(os.Args[2:]))
		}
	}
}

func runHelper(args []string, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintf(stderr, "odek sandbox: usage: %s <spec JSON> <command> [args…]\n", HelperArg)
		return ExitUsage
	}
	// Unknown fields fail: a helper older than the odek that starts it
	// (odek-sandbox not upgraded with odek) would drop limits it does not
	// know of; it refuses instead.
	var spec Spec
	dec := json.NewDecoder(strings.NewReader(args[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		fmt.Fprintf(stderr, "odek sandbox: bad spec: %v\n", err)
		return ExitUsage
	}
	if err := newSession(); err != nil {
		fmt.Fprintf(stderr, "odek sandbox: not running the command, the sandbox could not be applied: setsid: %v\n", err)
		return ExitNotConfined
	}
	if spec.Cgroup != "" {
		// Before Landlock, which denies /sys: the job's processes are
		// born in the job's cgroup and cannot leave it.
		for _, dir := range append([]string{spec.Cgroup}, spec.CgroupsV1...) {
			if err := joinCgroup(dir); err != nil {
				fmt.Fprintf(stderr, "odek sandbox: not running the command, the sandbox could not be applied: join the job's cgroup %s: %v\n", dir, err)
				return ExitNotConfined
			}
		}
	}
	if err := enforce(spec); err != nil {
		fmt.Fprintf(stderr, "odek sandbox: not running the command, the sandbox could not be applied: %v\n", err)
		return ExitNotConfined
	}
	argv := args[1:]
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "odek sandbox: %v\n", err)
		return ExitNotFound
	}
	if err := setLimits(spec); err != nil {
		fmt.Fprintf(stderr, "odek sandbox: not running the command, the sandbox could not be applied: %v\n", err)
		return ExitNotConfined
	}
	err = helperExec(path, argv, os.Environ())
	fmt.Fprintf(stderr, "odek sandbox: exec %s: %v\n", argv[0], err)
	return ExitNotConfined
}

var (
	exeOnce sync.Once
	exePath string
	exeErr  error
)

// LeanHelper is the name of the helper-only binary (cmd/odek-sandbox)
// that executable prefers when it sits beside this process's binary.
const LeanHelper = "odek-sandbox"

// executable is the binary re-executed as the helper, resolved once: the
// lean helper beside this process's binary when it is there and safe to
// run (leanHelper), else this binary itself, so an upgrade on disk cannot
// change which one runs mid-process (the path is kept; a replaced file is
// the new version).
func executable() (string, error) {
	exeOnce.Do(func() {
		exePath, exeErr = os.Executable()
		if exeErr == nil {
			if lean, ok := leanHelper(exePath); ok {
				exePath = lean
			}
		}
	})
	return exePath, exeErr
}

// Helper is the binary this process runs as the sandbox helper for every
// confined command: odek-sandbox beside this binary when it is there and
// safe to run, else this binary itself. Resolved once per process; for
// start-up logs and health reports, so an operator sees which one runs.
func Helper() (string, error) { return executable() }

// leanHelper is the odek-sandbox binary in the directory of exe (its
// symlinks resolved), when it is a regular executable file that only
// root or this process's user owns and can write: it is run unconfined,
// so a file anyone else could have put or changed there is never used.
func leanHelper(exe string) (string, bool) {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", false
	}
	p := filepath.Join(filepath.Dir(real), LeanHelper)
	if p == real {
		return "", false
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || fi.Mode().Perm()&0o022 != 0 {
		return "", false
	}
	if !ownedBySelfOrRoot(fi) {
		return "", false
	}
	return p, true
}

// Command returns a command that runs argv confined by spec: this binary
// re-executed as the helper. The caller sets Dir, Env (see Env), I/O and
// process attributes as for any exec.Cmd.
func Command(ctx context.Context, spec Spec, argv ...string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: no command")
	}
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find the odek executable for the sandbox helper: %v", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %v", err)
	}
	return exec.CommandContext(ctx, exe, append([]string{HelperArg, string(b)}, argv...)...), nil
}

// passEnv are the variables a confined command keeps from odek's
// environment; everything else (REDIS_URL, tokens, odek's own settings)
// stays out.
var passEnv = []string{"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM"}

// defaultPath is PATH when odek's environment has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// Env is the environment of a command confined by spec: the few
// variables of base in passEnv, and HOME and TMPDIR set to the job's
// private temp dir. Pure.
func Env(spec Spec, base []string) []string {
	out := make([]string, 0, len(passEnv)+3)
	hasPath := false
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range passEnv {
			if name == p {
				out = append(out, kv)
				hasPath = hasPath || name == "PATH"
			}
		}
	}
	if !hasPath {
		out = append(out, "PATH="+defaultPath)
	}
	return append(out, "HOME="+spec.TempDir, "TMPDIR="+spec.TempDir)
}
