package tools

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// plantGitRepo makes a repository in dir/r whose hooks and .git/config
// each try to run a program that creates a file named marker.<what> in
// dir/markers, and returns the markers directory.
func plantGitRepo(t *testing.T, dir string) string {
	t.Helper()
	markers := filepath.Join(dir, "markers")
	repo := filepath.Join(dir, "r")
	for _, d := range []string{markers, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q", "-b", "main")
	gitIn("config", "user.email", "t@example.com")
	gitIn("config", "user.name", "t")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn("add", "a.txt")
	gitIn("commit", "-q", "-m", "one")
	gitIn("branch", "side")

	touch := func(what string) string { return "touch " + filepath.Join(markers, "marker."+what) }
	hook := "#!/bin/sh\n" + touch("hook-$(basename \"$0\")") + "\n"
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
		"reference-transaction", "post-index-change", "pre-auto-gc", "post-rewrite", "pre-push"} {
		if err := os.WriteFile(filepath.Join(repo, ".git", "hooks", h), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A second hooks directory named by core.hooksPath.
	alt := filepath.Join(dir, "althooks")
	if err := os.MkdirAll(alt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alt, "pre-commit"), []byte("#!/bin/sh\n"+touch("althook")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := func(what string) string { return `"` + touch(what) + `; exit 1"` }
	// script makes a program for keys git runs without a shell.
	script := func(what string) string {
		p := filepath.Join(alt, what)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+touch(what)+"\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := "[core]\n" +
		"\thooksPath = " + alt + "\n" +
		"\tfsmonitor = " + prog("fsmonitor") + "\n" +
		"\tpager = " + prog("pager") + "\n" +
		"\teditor = " + prog("editor") + "\n" +
		"\taskPass = " + script("askpass") + "\n" +
		"\tsshCommand = " + prog("ssh") + "\n" +
		"[sequence]\n\teditor = " + prog("seqeditor") + "\n" +
		"[pager]\n\tlog = " + prog("pagerlog") + "\n" +
		"[commit]\n\tgpgSign = true\n" +
		"[tag]\n\tgpgSign = true\n" +
		"[log]\n\tshowSignature = true\n" +
		"[gpg]\n\tprogram = " + script("gpg") + "\n" +
		"[credential]\n\thelper = \"!" + touch("credential") + "\"\n" +
		"[credential \"https://example.com\"]\n\thelper = \"!" + touch("credential-url") + "\"\n" +
		"[protocol \"ext\"]\n\tallow = always\n" +
		"[help]\n\tformat = web\n" +
		"[web]\n\tbrowser = evil\n" +
		"[browser \"evil\"]\n\tcmd = " + prog("browser") + "\n" +
		"[interactive]\n\tdiffFilter = " + prog("difffilter") + "\n"
	f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(cfg); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A patch that adds cfg -> .git/config, and a bare repository whose
	// config names a pager.
	patch := "diff --git a/cfg b/cfg\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/cfg\n@@ -0,0 +1 @@\n+.git/config\n\\ No newline at end of file\n"
	if err := os.WriteFile(filepath.Join(dir, "link.patch"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := exec.Command("git", "init", "-q", "--bare", filepath.Join(dir, "bare"))
	bare.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	if out, err := bare.CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v\n%s", err, out)
	}
	return markers
}

func listMarkers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
	return names
}

// TestShellGitGuard plants hooks and program-naming keys in a repository's
// .git/config and runs the everyday git commands through the shell tool:
// none of the planted programs runs, and the commands still work.
func TestShellGitGuard(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	markers := plantGitRepo(t, dir)
	repo := filepath.Join(dir, "r")
	// HOME has no .gitconfig; GIT_EDITOR and friends are unset, as for a
	// worker.
	tool := builtin(t, Options{WorkDir: repo, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}}, "shell")
	steps := []struct {
		cmd    string
		wantOK bool
	}{
		{"git status", true},
		{"echo two >> a.txt && git diff", true},
		{"git add a.txt", true},
		{"git commit -q -m two", true},
		{"git log -1", true},
		{"git log -p -1", true},
		{"git -p log -1", true},
		{"git show", true},
		{"git branch b2", true},
		{"git checkout -q side", true},
		{"git checkout -q main", true},
		{"git tag v1 -m v1", true},
		{"git commit -q --allow-empty", false}, // the editor is refused
		{"git rebase -q -i HEAD~1", false},     // so is the sequence editor
		{"printf 'protocol=https\\nhost=example.com\\n\\n' | git credential fill", false},
		{"git ls-remote 'ext::sh -c touch% ../markers/marker.ext'", false},
		{"git ls-remote ssh://example.invalid/x", false},
		{"echo three >> a.txt && printf 'y\\n' | git add -p", true},
		// A patch that makes a symlink to .git/config leaves a plain file.
		{"git apply ../link.patch && test ! -L cfg && echo '[core] fsmonitor = \"touch ../markers/marker.link; false\"' >> cfg && git status", true},
		// A bare repository is used only when named.
		{"cd ../bare && git log", false},
		{"git commit -q -am three", true},
	}
	for _, s := range steps {
		in, _ := json.Marshal(map[string]string{"command": s.cmd})
		res := run(t, tool, string(in))
		if s.wantOK && res.IsError {
			t.Errorf("%s failed under the guard:\n%s", s.cmd, res.Text)
		}
		if got := listMarkers(t, markers); len(got) > 0 {
			t.Errorf("%s ran planted programs: %v\n%s", s.cmd, got, res.Text)
		}
	}
	mustContain(t, run(t, tool, `{"command":"cd ../bare && git log"}`), true, "safe.bareRepository")
	if fi, err := os.Lstat(filepath.Join(repo, "cfg")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("git apply of a symlink: %v, %v; want a regular file", fi, err)
	}
	// The commits happened.
	res := run(t, tool, `{"command":"git log --format=%s"}`)
	mustContain(t, res, false, "three\ntwo\none")
}

// TestShellGitGuardPlantedWorks shows the planted repository does run its
// programs when git runs without the guard, so TestShellGitGuard proves
// something.
func TestShellGitGuardPlantedWorks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	markers := plantGitRepo(t, dir)
	repo := filepath.Join(dir, "r")
	for _, c := range []struct{ cmd, marker string }{
		{"git status", "marker.fsmonitor"},
		{"git -c core.hooksPath=.git/hooks -c commit.gpgSign=false commit -q --allow-empty -m x", "marker.hook-pre-commit"},
		{"git -c commit.gpgSign=false commit -q --allow-empty -m x", "marker.althook"},
		{"git -c core.hooksPath=/dev/null commit -q --allow-empty -m x", "marker.gpg"},
		{"git -c commit.gpgSign=false -c core.hooksPath=/dev/null commit -q --allow-empty", "marker.editor"},
		{"printf 'protocol=https\\nhost=example.com\\n\\n' | git credential fill", "marker.credential"},
	} {
		cmd := exec.Command("sh", "-c", c.cmd)
		cmd.Dir = repo
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
		out, _ := cmd.CombinedOutput()
		got := listMarkers(t, markers)
		found := false
		for _, g := range got {
			found = found || g == c.marker
		}
		if !found {
			t.Errorf("%s without the guard: markers %v, want %s among them\n%s", c.cmd, got, c.marker, out)
		}
	}
}

func TestWithGitGuard(t *testing.T) {
	env := withGitGuard([]string{"A=1", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=x",
		"GIT_CONFIG_KEY_7=core.pager", "GIT_CONFIG_VALUE_7=evil", "GIT_CONFIG_PARAMETERS='core.pager'='evil'", "GIT_PAGER=evil"})
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := m[k]; dup {
			t.Errorf("%s set twice", k)
		}
		m[k] = v
	}
	if m["A"] != "1" || m["GIT_CONFIG_KEY_0"] != "user.name" || m["GIT_CONFIG_VALUE_0"] != "x" {
		t.Errorf("kept entries lost: %v", env)
	}
	if _, ok := m["GIT_CONFIG_PARAMETERS"]; ok {
		t.Errorf("GIT_CONFIG_PARAMETERS kept: %v", env)
	}
	if m["GIT_PAGER"] != "cat" {
		t.Errorf("GIT_PAGER = %q", m["GIT_PAGER"])
	}
	if m["GIT_CONFIG_COUNT"] != itoa(1+len(gitGuard)) {
		t.Errorf("GIT_CONFIG_COUNT = %q", m["GIT_CONFIG_COUNT"])
	}
	var keys []string
	for i := 1; i <= len(gitGuard); i++ {
		keys = append(keys, m["GIT_CONFIG_KEY_"+itoa(i)])
	}
	var want []string
	for _, kv := range gitGuard {
		want = append(want, kv[0])
	}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("guard keys = %v, want %v", keys, want)
	}
	// A count that is not a number drops the entries it would cover.
	env = withGitGuard([]string{"GIT_CONFIG_COUNT=x", "GIT_CONFIG_KEY_0=core.pager", "GIT_CONFIG_VALUE_0=evil"})
	if env[0] != "GIT_CONFIG_KEY_0="+gitGuard[0][0] {
		t.Errorf("bad count kept entries: %v", env)
	}
}
