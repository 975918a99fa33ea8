package main_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
)

// These tests run odek with an odek-sandbox installed beside it, as the
// image ships it: odek then runs that binary, not itself, for every
// confined command (internal/sandbox, executable).

// odekCopy puts odekBin into a fresh directory of its own (a hard link,
// or a copy across filesystems) and returns its path, so that whatever
// the test puts beside it is beside the odek that runs.
func odekCopy(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "odek")
	if err := os.Link(odekBin, bin); err == nil {
		return bin
	}
	src, err := os.Open(odekBin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// installLeanHelper returns an odek with the real odek-sandbox beside it,
// and the file that records each call of that helper: the odek-sandbox
// beside odek is a two-line script that appends its first argument (the
// helper mode) to the record and execs the real binary in its place (same
// process). A command confined any other way leaves no line, so a count
// of the record cannot come out right by accident.
func installLeanHelper(t *testing.T) (bin, calls string) {
	t.Helper()
	real, err := helperBins.Build("github.com/odekrun/odek/cmd/odek-sandbox")
	if err != nil {
		t.Fatal(err)
	}
	bin = odekCopy(t)
	calls = filepath.Join(t.TempDir(), "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> '%s'\nexec '%s' \"$@\"\n", calls, real)
	if err := os.WriteFile(filepath.Join(filepath.Dir(bin), sandbox.LeanHelper), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, calls
}

// countHelperCalls is how many commands (or jobs, through a job's
// supervisor) the recorded helper confined.
func countHelperCalls(t *testing.T, calls string) int {
	t.Helper()
	b, err := os.ReadFile(calls)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		// A job's supervisor (one per job where jobs have cgroups)
		// confines every command of its job.
		if line == sandbox.HelperArg || line == sandbox.SuperviseArg {
			n++
		}
	}
	return n
}

// An odek-sandbox beside odek that anyone but root or odek's user could
// have written or replaced is never run (odek re-executes itself, and
// the command runs confined as before); one that is safe to run but
// stale, refusing the spec the way a helper older than odek refuses a
// field it does not know, fails the command closed: odek does not fall
// back to running it some other way. Each case is one `odek run
// --confine` with one shell call; the stand-in helper records that it
// ran and answers as a stale helper does.
func TestSandboxHelperBesideOdekUnsafeOrStale(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	type layout func(t *testing.T, helper string, stale []byte)
	write := func(mode os.FileMode) layout {
		return func(t *testing.T, helper string, stale []byte) {
			if err := os.WriteFile(helper, stale, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(helper, mode); err != nil { // past the umask
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name string
		lay  layout
		used bool
	}{
		{"stale and safe", write(0o755), true},
		{"group-writable", write(0o775), false},
		{"world-writable", write(0o757), false},
		{"not executable", write(0o644), false},
		{"a symlink", func(t *testing.T, helper string, stale []byte) {
			target := filepath.Join(t.TempDir(), "odek-sandbox")
			write(0o755)(t, target, stale)
			if err := os.Symlink(target, helper); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"another user's", func(t *testing.T, helper string, stale []byte) {
			if os.Geteuid() != 0 {
				t.Skip("making another user's file needs root")
			}
			write(0o755)(t, helper, stale)
			if err := os.Chown(helper, 12345, 12345); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin := odekCopy(t)
			marker := filepath.Join(t.TempDir(), "helper-ran")
			stale := fmt.Sprintf("#!/bin/sh\necho \"$1\" > '%s'\necho 'odek sandbox: bad spec: json: unknown field \"job_limit_from_the_future\"' >&2\nexit %d\n", marker, sandbox.ExitUsage)
			c.lay(t, filepath.Join(filepath.Dir(bin), sandbox.LeanHelper), []byte(stale))

			work := t.TempDir()
			srv := llmtest.New(t,
				llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: `{"command":"echo confined > ran.txt && cat ran.txt"}`}),
				llmtest.Reply("done"))
			cmd := odekCmd(t, t.Context(), srv.URL, work, "run", "--confine", "--quiet", "run it")
			cmd.Path, cmd.Args[0] = bin, bin
			cmd.Env = append(cmd.Env, "ODEK_HOME="+home)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("odek run: %v\n%s", err, out)
			}
			reqs := srv.Requests()
			var result string
			for _, m := range reqs[len(reqs)-1].Messages {
				if m.Role == llm.RoleTool {
					result = m.Content
				}
			}
			_, helperErr := os.Stat(marker)
			_, ranErr := os.Stat(filepath.Join(work, "ran.txt"))
			if c.used {
				// The control: a file in this place is run, so the other
				// cases' "not run" is the check, not an accident of layout.
				if helperErr != nil {
					t.Fatalf("the safe odek-sandbox beside odek was not run: %v (result %q)", helperErr, result)
				}
				if ranErr == nil {
					t.Errorf("the helper refused the spec, yet the command ran (odek fell back to another helper)")
				}
				if !strings.Contains(result, "job_limit_from_the_future") {
					t.Errorf("the model was not told why the command did not run: %q", result)
				}
				return
			}
			if helperErr == nil {
				t.Fatalf("odek ran the odek-sandbox beside it (%s)", c.name)
			}
			if ranErr != nil || !strings.Contains(result, "confined") {
				t.Fatalf("the command did not run through odek itself: %v, result %q\n%s", ranErr, result, out)
			}
		})
	}
}
