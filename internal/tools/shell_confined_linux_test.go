//go:build linux

package tools

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/sandbox"
)

// A confined shell runs in a session of its own (the Jail's), and its
// timeout still kills its whole process group.
func TestSandboxedShellTimeoutKillsGroup(t *testing.T) {
	if abi := sandbox.ABI(); abi < sandbox.RequiredABI {
		if os.Getenv("ODEK_REQUIRE_LANDLOCK") != "" {
			t.Fatalf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
		}
		t.Skipf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
	}
	dir := t.TempDir()
	spec, err := sandbox.NewSpec(sandbox.Settings{}, sandbox.Paths{Root: dir, TempDir: t.TempDir()}, sandbox.Host)
	if err != nil {
		t.Fatal(err)
	}
	jail, err := sandbox.NewJail(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer jail.Close()
	sh := builtin(t, Options{WorkDir: dir, Confine: true, Sandbox: jail, Env: []string{"PATH=/usr/bin:/bin"}}, "shell")
	if d := sh.Definition().Description; !strings.Contains(d, "no Unix, raw or netlink sockets") || !strings.Contains(d, "ends with this job") {
		t.Errorf("the description does not say what the sandbox refuses: %s", d)
	}
	// On a loaded machine the timeout can end the call before the shell
	// has written the background sleep's pid: then the call is tried
	// again with twice the time, up to 4 s.
	var pidText []byte
	for timeout := 500 * time.Millisecond; ; timeout *= 2 {
		res := run(t, sh, fmt.Sprintf(`{"command":"sleep 100 & echo $! > pid; sleep 100","timeout_seconds":%g}`, timeout.Seconds()))
		mustContain(t, res, true, "timed out after "+timeout.String())
		if pidText, err = os.ReadFile(filepath.Join(dir, "pid")); err == nil && len(bytes.TrimSpace(pidText)) > 0 {
			break
		}
		if timeout >= 4*time.Second {
			t.Fatalf("the shell never wrote the background sleep's pid: %v %q", err, pidText)
		}
	}
	waitGone(t, strings.TrimSpace(string(pidText)))
	// Where the job has a cgroup, the call went through the job's
	// supervisor, which lives on for the job's next call.
	if _, err := sandbox.CgroupStatus(); err == nil {
		pid, why := jail.Supervisor()
		if pid == 0 {
			t.Fatalf("the shell did not run through the job's supervisor: %v", why)
		}
		mustContain(t, run(t, sh, `{"command":"echo again"}`), false, "again")
		if again, _ := jail.Supervisor(); again != pid {
			t.Errorf("the supervisor changed from %d to %d after a timed-out call", pid, again)
		}
	}
}
