//go:build unix

package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gitTestEnv is the environment of the test's own git commands.
func gitTestEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
}

func gitRun(t *testing.T, dir, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitTestEnv(home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

func appendFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// newDriverRepo makes a repository in dir with one committed file that
// .gitattributes gives filter, diff and merge drivers named "x".
func newDriverRepo(t *testing.T, dir, home string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, home, "init", "-q", "-b", "main")
	appendFile(t, filepath.Join(dir, "a.txt"), "one\n")
	appendFile(t, filepath.Join(dir, ".gitattributes"), "*.txt filter=x diff=x merge=x\n")
	gitRun(t, dir, home, "add", ".")
	gitRun(t, dir, home, "commit", "-q", "-m", "one")
}

func assessShell(t *testing.T, tool Tool, command string) Assessment {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"command": command})
	a, err := tool.Assess(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestShellRatesGitByItsRepository plants, in a real repository, the
// drivers and other program-naming keys git has no switch for, and
// checks that the shell tool rates the everyday git commands that would
// run them code_execution, through every way of reaching the repository
// (the working directory, cd, -C, a subdirectory, a submodule or
// embedded repository, a gitdir file, an included file), while keys the
// guard overrides and a clean repository keep their class. One case
// runs the command through the tool to show the planted program is real
// and does run under the guard. On the classifier before the
// inspection, every planted case was safe or local_write.
func TestShellRatesGitByItsRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	touch := `"touch ` + marker + `; cat"`

	type plant struct {
		name string
		// setup plants into the repository at dir (the working directory).
		setup   func(t *testing.T, dir string)
		command string
		// want is the class expected; reason, a substring of the reason.
		want   Class
		reason string
	}
	cfg := func(text string) func(*testing.T, string) {
		return func(t *testing.T, dir string) { appendFile(t, filepath.Join(dir, ".git", "config"), text) }
	}
	cases := []plant{
		{"clean repository", func(*testing.T, string) {}, "git status && git diff && git log -p", ClassSafe, ""},
		{"clean repository, add", func(*testing.T, string) {}, "git add a.txt", ClassLocalWrite, ""},
		{"guard-overridden keys", cfg("[core]\n\tpager = " + touch + "\n\tfsmonitor = " + touch + "\n\thooksPath = /tmp\n[pager]\n\tlog = " + touch + "\n"),
			"git status && git log", ClassSafe, ""},
		{"filter clean", cfg("[filter \"x\"]\n\tclean = " + touch + "\n"), "git status", ClassCodeExecution, "filter.x.clean"},
		{"filter process", cfg("[filter \"x\"]\n\tprocess = " + touch + "\n"), "git add a.txt", ClassCodeExecution, "filter.x.process"},
		{"diff textconv", cfg("[diff \"x\"]\n\ttextconv = " + touch + "\n"), "git diff", ClassCodeExecution, "diff.x.textconv"},
		{"diff command", cfg("[diff \"x\"]\n\tcommand = " + touch + "\n"), "git log -p", ClassCodeExecution, "diff.x.command"},
		{"diff.external", cfg("[diff]\n\texternal = " + touch + "\n"), "git diff", ClassCodeExecution, "diff.external"},
		{"merge driver", cfg("[merge \"x\"]\n\tdriver = " + touch + "\n"), "git merge side", ClassCodeExecution, "merge.x.driver"},
		{"shell alias", cfg("[alias]\n\tst = !" + touch + "\n"), "git status", ClassCodeExecution, "alias.st"},
		{"legacy subsection", cfg("[filter.X]\n\tsmudge = " + touch + "\n"), "git checkout side", ClassCodeExecution, "filter.x.smudge"},
		{"key after header on one line", cfg("[filter \"x\"] clean = " + touch + "\n"), "git status", ClassCodeExecution, "filter.x.clean"},
		{"include", cfg("[include]\n\tpath = ../inc\n"), "git status", ClassCodeExecution, "include.path"},
		{"includeIf", cfg("[includeIf \"gitdir:/\"]\n\tpath = /tmp/inc\n"), "git status", ClassCodeExecution, "includeif"},
		{"core.worktree", cfg("[core]\n\tworktree = /\n"), "git status", ClassCodeExecution, "core.worktree"},
		{"unparseable", cfg("[filter \"x\"\n\tclean = x\n"), "git status", ClassCodeExecution, "cannot be read"},
		{"worktree config", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, ".git", "config.worktree"), "[filter \"x\"]\n\tclean = "+touch+"\n")
		}, "git status", ClassCodeExecution, "config.worktree"},
		{"cd into a nested repository", func(t *testing.T, dir string) {
			newDriverRepo(t, filepath.Join(dir, "sub"), home)
			appendFile(t, filepath.Join(dir, "sub", ".git", "config"), "[filter \"x\"]\n\tclean = "+touch+"\n")
		}, "cd sub && git status", ClassCodeExecution, "sub/.git/config"},
		{"git -C a nested repository", func(t *testing.T, dir string) {
			newDriverRepo(t, filepath.Join(dir, "sub"), home)
			appendFile(t, filepath.Join(dir, "sub", ".git", "config"), "[diff \"x\"]\n\ttextconv = "+touch+"\n")
		}, "git -C sub diff", ClassCodeExecution, "sub/.git/config"},
		{"a subdirectory of the repository", cfg("[filter \"x\"]\n\tclean = " + touch + "\n"), "mkdir -p d && cd d && git status", ClassCodeExecution, "filter.x.clean"},
		{"embedded repository the index records", func(t *testing.T, dir string) {
			sub := filepath.Join(dir, "emb")
			newDriverRepo(t, sub, home)
			gitRun(t, dir, home, "add", "emb")
			gitRun(t, dir, home, "commit", "-q", "-m", "emb")
			appendFile(t, filepath.Join(sub, ".git", "config"), "[filter \"x\"]\n\tclean = "+touch+"\n")
		}, "git status", ClassCodeExecution, "emb/.git/config"},
		{"gitdir file pointing elsewhere in the working directory", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, "hidden")); err != nil {
				t.Fatal(err)
			}
			appendFile(t, filepath.Join(dir, ".git"), "gitdir: hidden\n")
			appendFile(t, filepath.Join(dir, "hidden", "config"), "[filter \"x\"]\n\tclean = "+touch+"\n")
		}, "git status", ClassCodeExecution, "hidden/config"},
		{"gitdir file pointing outside", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
			appendFile(t, filepath.Join(dir, ".git"), "gitdir: /etc\n")
		}, "git status", ClassCodeExecution, "outside"},
		{".git symlink leading outside", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(t.TempDir(), filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
		}, "git status", ClassCodeExecution, "cannot be inspected"},
		{"cd outside", func(*testing.T, string) {}, "cd /tmp && git status", ClassCodeExecution, "outside"},
		{"-C decided at run time", func(*testing.T, string) {}, `git -C "$D" status`, ClassCodeExecution, "run time"},
		{"inside a substitution", cfg("[filter \"x\"]\n\tclean = " + touch + "\n"), "echo $(git status)", ClassCodeExecution, "filter.x.clean"},
		{"through env -S", cfg("[filter \"x\"]\n\tclean = " + touch + "\n"), "env -S 'git status'", ClassCodeExecution, "filter.x.clean"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "w")
			newDriverRepo(t, dir, home)
			gitRun(t, dir, home, "branch", "side")
			tc.setup(t, dir)
			tool := builtin(t, Options{WorkDir: dir, Env: gitTestEnv(home)}, "shell")
			a := assessShell(t, tool, tc.command)
			if a.Class != tc.want {
				t.Fatalf("%q: class %s (%v), want %s", tc.command, a.Class, a.Summary, tc.want)
			}
			// The old classifier, without the repository's files.
			if old := ClassifyShell(tc.command); tc.want == ClassCodeExecution && tc.reason != "run time" && tc.reason != "outside" &&
				Severity(old.Class) >= Severity(ClassCodeExecution) {
				t.Fatalf("%q is %s without the inspection: the case does not test it", tc.command, old.Class)
			}
			if tc.reason != "" {
				g := &gitUse{}
				v := gitRepoVerdict(classifyLine(tc.command, dir, 0, g), g, dir, "")
				if !strings.Contains(strings.ToLower(v.Reason), strings.ToLower(tc.reason)) {
					t.Fatalf("%q: reason %q, want it to name %q", tc.command, v.Reason, tc.reason)
				}
			}
		})
	}

	// The planted filter is real: git status under the guard runs it
	// (the guard alone does not stop it), which is why the command asks.
	dir := filepath.Join(t.TempDir(), "w")
	newDriverRepo(t, dir, home)
	appendFile(t, filepath.Join(dir, ".git", "config"), "[filter \"x\"]\n\tclean = "+touch+"\n")
	// Same size, another mtime: git must read the file through its
	// clean filter to tell whether it changed.
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	tool := builtin(t, Options{WorkDir: dir, Env: gitTestEnv(home)}, "shell")
	run(t, tool, `{"command":"git status --short"}`)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the planted filter did not run under the guard (%v): the test plants nothing real", err)
	}
}

func gitUseOf(command, dir string) *gitUse {
	g := &gitUse{}
	classifyLine(command, dir, 0, g)
	return g
}

// TestShellRatesGitByTheJobsGlobalConfig: a confined job's HOME is its
// temp dir, and git reads ~/.gitconfig and ~/.config/git/config there.
func TestShellRatesGitByTheJobsGlobalConfig(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	g := gitUseOf("git status", dir)
	if v := gitRepoVerdict(ShellVerdict{Class: ClassSafe}, g, dir, home); v.Class != ClassSafe {
		t.Fatalf("empty home: %+v", v)
	}
	appendFile(t, filepath.Join(home, ".config", "git", "config"), "[diff \"x\"]\n\ttextconv = evil\n")
	if v := gitRepoVerdict(ShellVerdict{Class: ClassSafe}, g, dir, home); v.Class != ClassCodeExecution || !strings.Contains(v.Reason, "~/.config/git/config") {
		t.Fatalf("planted global config: %+v", v)
	}
	// A FIFO where a configuration file should be: refused, not read.
	if err := os.Remove(filepath.Join(home, ".config", "git", "config")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(home, ".gitconfig"), 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	if v := gitRepoVerdict(ShellVerdict{Class: ClassSafe}, g, dir, home); v.Class != ClassCodeExecution || !strings.Contains(v.Reason, "not a regular file") {
		t.Fatalf("FIFO: %+v", v)
	}
}

// gitConfigSeeds are configuration texts whose reading must match git's.
var gitConfigSeeds = []string{
	"[core]\n\tbare = false\n",
	"[filter \"x\"]\n\tclean = a\n",
	"[filter \"x\"] clean = a\n",
	"[Filter.X]\nClean=a\n",
	"[a]\nb\n",
	"[a]\n\tb = c \\\n[filter \"x\"]\n",
	"[a]\n\tb = \"c \\\" # d\"\n[filter \"x\"]\nclean=y\n",
	"[a]\n\tb = c ; [filter \"x\"]\n\tclean = y\n",
	"[a]\r\n\tb = c\r\n",
	"\xef\xbb\xbf[a]\nb=c\n",
	"[a \"sub \\\" ]\"]\nb=c\n",
	"# c\n; d\n[a]\n",
	"[a]\n\tb = \"unterminated\n",
	"[a]\n\tb = bad \\q escape\n",
	"b = c\n",
	"[a] [b] c = d\n",
	"[a]\n\tb = c\\",
	"[a]\n\tb = c\\\n",
	"[a]\n\t1b = c\n",
	"[a]\n\tb-c = d\n\tb_c = e\n",
	"[a \"x\"y]\n",
	"[a\t\"x\"]\nb=c\n",
	"[a]\n\tb\t=\tc\t# x\n",
	"[a]b=c\n",
	"[\"x\"]\nb=c\n",
	"[a]\n\tb = c\x00d\n",
}

// gitListNames is git's own reading of a configuration text: its key
// names, or ok false when git rejects the text.
func gitListNames(t testing.TB, text string) ([]string, bool) {
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--list", "--name-only")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent"}
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == '\n' }), true
}

func ourNames(text string) ([]string, bool) {
	entries, err := parseGitConfig([]byte(text))
	if err != nil {
		return nil, false
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.key())
	}
	return names, true
}

// checkAgainstGit: where git accepts a text, the parser reads the same
// keys in the same order (a parse error where git accepts fails closed,
// so it is allowed only when git's keys are as dangerous — never here).
func checkAgainstGit(t testing.TB, text string) {
	want, gitOK := gitListNames(t, text)
	got, ok := ourNames(text)
	if gitOK && !ok {
		t.Fatalf("%q: git reads %v, the parser rejects it", text, want)
	}
	if gitOK && !slices.Equal(got, want) {
		t.Fatalf("%q: parser reads %v, git %v", text, got, want)
	}
	if !gitOK && ok {
		// git rejects it: git runs nothing from this file at all (the
		// command fails), so the parser's reading does not matter; but
		// it must not have missed keys a lenient git could see.
		_ = got
	}
}

func TestParseGitConfigReadsAsGitDoes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, s := range gitConfigSeeds {
		checkAgainstGit(t, s)
	}
}

func FuzzGitConfig(f *testing.F) {
	for _, s := range gitConfigSeeds {
		f.Add(s)
	}
	_, err := exec.LookPath("git")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		if err != nil {
			_, _ = ourNames(text)
			return
		}
		checkAgainstGit(t, text)
	})
}

// FuzzGitIndex feeds the index reader real indexes (with a gitlink, in
// versions 2, 3 and 4) and what the fuzzer makes of them: it never
// panics, and on the real ones finds exactly the gitlink.
func FuzzGitIndex(f *testing.F) {
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("git not installed")
	}
	home := f.TempDir()
	dir := filepath.Join(f.TempDir(), "w")
	for _, v := range []string{"2", "3", "4"} {
		d := filepath.Join(dir, v)
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
		for _, args := range [][]string{{"init", "-q"}, {"init", "-q", "inner"}, {"-C", "inner", "commit", "-q", "--allow-empty", "-m", "x"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = d, gitTestEnv(home)
			if out, err := cmd.CombinedOutput(); err != nil {
				f.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		for _, n := range []string{"a", "b/c", "b/d/e"} {
			if err := os.MkdirAll(filepath.Join(d, filepath.Dir(n)), 0o755); err != nil {
				f.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, n), []byte(n), 0o644); err != nil {
				f.Fatal(err)
			}
		}
		for _, args := range [][]string{{"add", "a", "b", "inner"}, {"update-index", "--index-version", v}, {"update-index", "--chmod=+x", "a"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = d, gitTestEnv(home)
			if out, err := cmd.CombinedOutput(); err != nil {
				f.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		if v == "3" {
			cmd := exec.Command("git", "update-index", "--skip-worktree", "a")
			cmd.Dir, cmd.Env = d, gitTestEnv(home)
			if out, err := cmd.CombinedOutput(); err != nil {
				f.Fatalf("skip-worktree: %v %s", err, out)
			}
		}
		b, err := os.ReadFile(filepath.Join(d, ".git", "index"))
		if err != nil {
			f.Fatal(err)
		}
		links, err := parseGitIndexLinks(b, false)
		if err != nil || !slices.Equal(links, []string{"inner"}) {
			f.Fatalf("index version %s: gitlinks %v, %v; want [inner]", v, links, err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		links, err := parseGitIndexLinks(b, false)
		if err == nil {
			for _, l := range links {
				if l == "" || strings.HasPrefix(l, "/") || strings.HasPrefix(l, "../") {
					t.Fatalf("gitlink %q", l)
				}
			}
		}
	})
}

// BenchmarkAssessGitStatus is what reading the repository adds to rating
// a git command: the shell tool's Assess of `git status` in a clean
// repository of 200 tracked files, against the classifier alone.
func BenchmarkAssessGitStatus(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not installed")
	}
	home := b.TempDir()
	dir := filepath.Join(b.TempDir(), "w")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gitTestEnv(home)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	tool := builtin(b, Options{WorkDir: dir, Env: gitTestEnv(home)}, "shell")
	args := json.RawMessage(`{"command":"git status"}`)
	b.Run("classifier alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			classifyShell("git status", dir, 0)
		}
	})
	b.Run("Assess with the repository read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a, err := tool.Assess(args); err != nil || a.Class != ClassSafe {
				b.Fatal(a, err)
			}
		}
	})
}

// A driver planted after the rating — by a parallel tool call, or a
// process an earlier command left running — does not run: Run reads the
// repository again and refuses a line rated below code_execution whose
// repository now names a program. On the code before, the planted filter
// ran (the marker appeared).
func TestShellRunRechecksTheRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	dir := filepath.Join(t.TempDir(), "w")
	newDriverRepo(t, dir, home)
	tool := builtin(t, Options{WorkDir: dir, Env: gitTestEnv(home)}, "shell")
	const cmd = `{"command":"git add a.txt"}`
	if a := assessShell(t, tool, "git add a.txt"); a.Class != ClassLocalWrite {
		t.Fatalf("clean repository: %s", a.Class)
	}
	appendFile(t, filepath.Join(dir, ".git", "config"), "[filter \"x\"]\n\tclean = \"touch "+marker+"; cat\"\n")
	appendFile(t, filepath.Join(dir, "a.txt"), "two\n")
	res := run(t, tool, cmd)
	if !res.IsError || !strings.Contains(res.Text, "filter.x.clean") {
		t.Errorf("ran after the repository changed: %q", res.Text)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the filter planted after the rating ran")
	}
	// Rated again, the line is code_execution; approved, it runs (the
	// recheck does not stand in the way of an approval that covers it).
	if a := assessShell(t, tool, "git add a.txt"); a.Class != ClassCodeExecution {
		t.Fatalf("after planting: %s", a.Class)
	}
	if res := run(t, tool, cmd); res.IsError {
		t.Fatalf("approved run refused: %q", res.Text)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the approved command did not run the filter")
	}
}
