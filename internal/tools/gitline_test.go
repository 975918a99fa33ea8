package tools

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// plantedLib makes dir a clean repository with lib/ beside it: a
// repository whose configuration defines filter "x" (touching
// MARKER_FILTER) and whose .gitattributes selects it for every file.
func plantedLib(t *testing.T, dir string) {
	t.Helper()
	const ident = "GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com "
	for _, c := range []string{
		"git init -q . && echo one > f && git add f && " + ident + "git commit -q -m one",
		"mkdir lib && cd lib && git init -q . && printf '* filter=x\\n' > .gitattributes && echo two > g && " +
			`printf '[filter "x"]\n\tclean = "touch MARKER_FILTER; cat"\n' >> .git/config`,
	} {
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
}

// A line that runs git beside a command writing files its words do not
// name is code_execution: that command may write git's configuration
// after the repositories were checked. Lines whose writes the words name
// keep their class. The first line is also run, to show that on the
// rating before this rule it ran the planted filter.
func TestShellRatesGitBesideUnlistedWrites(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	plantedLib(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sh := builtin(t, Options{WorkDir: dir}, "shell")
	for cmd, want := range map[string]Class{
		"cp -r lib/. . && git add -A":                      ClassCodeExecution,
		"cp -a lib/. .; git status":                        ClassCodeExecution,
		"cp -R lib/.git . && git status":                   ClassCodeExecution, // named .git: already
		"mv lib x && cd x && git status":                   ClassCodeExecution,
		"ln -s lib y; cd y && git status":                  ClassCodeExecution,
		"rsync -a lib/ . ; git status":                     ClassCodeExecution,
		"sh -c 'cp -r lib/. .'; git status":                ClassCodeExecution,
		"git status; cp -r lib/. .":                        ClassCodeExecution,
		"cp -t . lib/g && git status":                      ClassLocalWrite,
		"cp lib a.txt && git status":                       ClassCodeExecution, // lib is a directory
		"cp \"$X\" b.txt && git status":                    ClassCodeExecution,
		"echo hi > b.txt && git add b.txt":                 ClassLocalWrite,
		"cp a.txt b.txt && git add b.txt":                  ClassLocalWrite,
		"mv a.txt c.txt && git status":                     ClassLocalWrite,
		"mkdir d && touch d/x && git add d":                ClassLocalWrite,
		"sed -i s/x/y/ a.txt && git diff":                  ClassLocalWrite,
		"cp -r lib lib2":                                   ClassLocalWrite, // no git in the line
		"git add -A && git commit -q -m x && git log -n 1": ClassLocalWrite,
	} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		a, err := sh.Assess(in)
		if err != nil {
			t.Fatal(err)
		}
		if a.Class != want {
			t.Errorf("shell %q = %s (%v), want %s", cmd, a.Class, a.Summary["git"], want)
		}
	}
	// Unrated, as it would have run: the copy lands before git reads.
	res := run(t, sh, `{"command":"cp -r lib/. . && git add -A"}`)
	if _, err := os.Stat(filepath.Join(dir, "MARKER_FILTER")); err != nil {
		t.Fatalf("the planted filter did not run when the line ran (%v): %s", err, res.Text)
	}
}

// A shell line that runs git waits for the run's writing calls, and they
// wait for it: a copy that lands while git would read is ordered before
// its second check (which then refuses it) or after it. With the two
// calls of one reply, `sleep 1 && cp -r lib/. .` and
// `sleep 2 && git add -A`, the filter never runs; without the gate the
// copy lands a second into the git line, after its check.
func TestShellGitLineRunsAlone(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	plantedLib(t, dir)
	sh := builtin(t, Options{WorkDir: dir}, "shell")
	lines := []string{"sleep 1 && cp -r lib/. .", "sleep 2 && git add -A"}
	args := make([]json.RawMessage, len(lines))
	for i, l := range lines {
		args[i], _ = json.Marshal(map[string]string{"command": l})
		a, err := sh.Assess(args[i])
		if err != nil || a.Class != ClassLocalWrite {
			t.Fatalf("%q = %s, %v; want local_write", l, a.Class, err)
		}
	}
	var wg sync.WaitGroup
	out := make([]string, len(lines))
	for i := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sh.Run(context.Background(), args[i])
			if err != nil {
				t.Error(err)
			}
			out[i] = r.Text
		}()
		if i == 0 {
			time.Sleep(100 * time.Millisecond) // the copy's line starts first
		}
	}
	wg.Wait()
	if _, err := os.Stat(filepath.Join(dir, "MARKER_FILTER")); err == nil {
		t.Fatalf("the planted filter ran: %q", out)
	}
	if !strings.Contains(out[1], "not run") || !strings.Contains(out[1], "filter.x.clean") {
		t.Errorf("git line: %q, want it refused naming filter.x.clean", out[1])
	}
}

// The gate: a holder of it exclusively excludes everyone; shared holders
// exclude only exclusive ones; a waiting exclusive holder keeps new
// shared ones out; waiting ends with the context.
func TestGitGate(t *testing.T) {
	var g gitGate
	ctx := context.Background()
	r1, err := g.lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := g.lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 3)
	go func() {
		rel, err := g.lock(ctx, true)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- "exclusive"
		rel()
	}()
	for {
		g.mu.Lock()
		w := g.waiting
		g.mu.Unlock()
		if w == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	go func() {
		rel, err := g.lock(ctx, false)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- "shared"
		rel()
	}()
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := g.lock(tctx, true); err == nil {
		t.Fatal("an exclusive lock was granted while shared holders held the gate")
	}
	select {
	case s := <-got:
		t.Fatalf("%s granted while two shared holders held the gate", s)
	default:
	}
	r1()
	r2()
	if a, b := <-got, <-got; a != "exclusive" || b != "shared" {
		t.Errorf("granted %s then %s, want the waiting exclusive holder first", a, b)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shared != 0 || g.held || g.waiting != 0 {
		t.Errorf("gate left at shared=%d held=%v waiting=%d", g.shared, g.held, g.waiting)
	}
}

// A confined job's git never uses a repository above its working
// directory: with a repository planted one level up (its configuration
// defines filter "x", its .gitattributes selects it), git add -A in the
// chat's directory finds no repository (GIT_CEILING_DIRECTORIES) instead
// of running the filter, and assigning the variable away is
// code_execution. Unconfined, git still finds it (an odek run in a
// project's subdirectory uses the project).
func TestConfinedGitStopsAtTheWorkingDirectory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, confine := range []bool{true, false} {
		top := t.TempDir()
		cmd := exec.Command("sh", "-c", `git init -q . && printf '* filter=x\n' > .gitattributes && `+
			`printf '[filter "x"]\n\tclean = "touch '"$PWD"'/MARKER_ABOVE; cat"\n' >> .git/config && mkdir chat && echo hi > chat/f`)
		cmd.Dir = top
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		dir := filepath.Join(top, "chat")
		sh := builtin(t, Options{WorkDir: dir, Confine: confine}, "shell")
		res := run(t, sh, `{"command":"git add -A"}`)
		_, err := os.Stat(filepath.Join(top, "MARKER_ABOVE"))
		if confine {
			if err == nil {
				t.Errorf("confined: git used the repository above and ran its filter: %s", res.Text)
			}
			if !strings.Contains(res.Text, "not a git repository") {
				t.Errorf("confined: git add -A = %q, want it to find no repository", res.Text)
			}
		} else if err != nil {
			t.Errorf("unconfined: git did not use the repository above (%v): %s", err, res.Text)
		}
	}
	for _, line := range []string{"GIT_CEILING_DIRECTORIES= git status", "export GIT_CEILING_DIRECTORIES=/",
		"unset GIT_CEILING_DIRECTORIES; git status", "GIT_COMMON_DIR=lib/.git git status",
		"GIT_DISCOVERY_ACROSS_FILESYSTEM=1 git status", "GIT_TRACE=.git/config git status"} {
		if v := ClassifyShell(line); Severity(v.Class) < Severity(ClassCodeExecution) {
			t.Errorf("%q = %s (%s), want code_execution", line, v.Class, v.Reason)
		}
	}
	if v := ClassifyShell("GIT_AUTHOR_NAME=a git commit -m x"); v.Class != ClassLocalWrite {
		t.Errorf("an identity variable: %s (%s), want local_write", v.Class, v.Reason)
	}
}
