package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClassifyGitPlanting: every way a command line can plant a program
// that git (or cargo) runs on an everyday command, or drop the shell's git
// guard, is at least code_execution; everyday commands near those paths
// keep their class.
func TestClassifyGitPlanting(t *testing.T) {
	atLeastCode := []string{
		// Writes into .git by every writer the classifier reads.
		"echo '[core] fsmonitor = x' >> .git/config",
		"printf x > ./.git/hooks/pre-commit",
		"echo x > sub/.git/config",
		"echo x > .GIT/config",
		"echo x > .g*/config",
		"echo x > .gi?/hooks/post-checkout",
		"echo x > {.git,x}/config",
		"cat x > " + "/work/repo/.git/config",
		"cp hook .git/hooks/pre-commit",
		"cp -t .git/hooks hook",
		"install -m 755 hook .git/hooks/pre-commit",
		"mv cfg .git/config",
		"ln -sf ../../hook .git/hooks/pre-commit",
		"ln -s .git g",
		"ln -s ../.git g",
		"cp -s .git/config c",
		"tee -a .git/config < cfg",
		"dd if=cfg of=.git/config",
		"sed -i 's/a/b/' .git/config",
		"touch .git/hooks/pre-commit",
		"mkdir -p .git/hooks",
		"cd .git && echo x >> config",
		// git's own output options (the review of issue 21: -o was safe).
		"git archive -o .git/info/attributes HEAD",
		"git archive -o.git/config HEAD",
		"git format-patch -o .git/hooks HEAD~1",
		"git format-patch --output-directory=.git/hooks HEAD~1",
		"cd .git/hooks; cp ../../h pre-commit",
		"cd sub/.git; printf x > config",
		// The attribute file that selects filter/diff/merge drivers, and
		// configuration outside a repository.
		"echo '* filter=x' > .gitattributes",
		"echo '* diff=x' >> sub/.gitattributes",
		"echo x > .gitconfig",
		"echo x > .config/git/config",
		"echo x > .config/git/attributes",
		"echo x > .cargo/config.toml",
		"cp c .cargo/config",
		// Archives and patches write what they carry.
		"tar xf a.tar",
		"tar -xzf a.tgz -C sub",
		"tar --extract -f a.tar",
		"bsdtar -xf a.tar",
		"unzip a.zip",
		"unzip -o a.zip -d out",
		"patch -p1 < fix.diff",
		"patch -p1 -i fix.diff",
		// git's own ways.
		"git config core.fsmonitor x",
		"git -c core.fsmonitor=x status",
		"git --config-env=core.pager=P log",
		"git init --template=t",
		"git init --separate-git-dir=d",
		"git clone --separate-git-dir d u",
		"git --git-dir=bare show",
		"git --git-dir bare log -p",
		"ln -s \"$(printf .git)\" g",
		"git help status",
		"git status --help",
		// Dropping the guard from the environment.
		"unset GIT_CONFIG_COUNT; git status",
		"unset GIT_PAGER",
		"env -i git status",
		"env - git status",
		"env -u GIT_CONFIG_COUNT git status",
		"env --unset=GIT_CONFIG_KEY_0 git status",
		"GIT_CONFIG_COUNT=0 git status",
		"export GIT_CONFIG_COUNT=0",
		"export -n GIT_CONFIG_COUNT",
		"exec -c git status",
		"RUSTC_WRAPPER=./x cargo metadata",
		"CARGO_BUILD_RUSTC=./x cargo metadata",
		"cargo metadata --format-version 1",
		"cargo tree",
	}
	for _, cmd := range atLeastCode {
		v := classifyShell(cmd, "/work/repo", 0)
		if Severity(v.Class) < Severity(ClassCodeExecution) {
			t.Errorf("classify(%q) = %s (%s), want at least code_execution", cmd, v.Class, v.Reason)
		}
	}
	same := []struct {
		cmd   string
		class Class
	}{
		{"git status", ClassSafe},
		{"git diff", ClassSafe},
		{"git commit -m help", ClassLocalWrite},
		{"cat .git/config", ClassSafe},
		{"ls .git/hooks", ClassSafe},
		{"cp .git/config cfg.bak", ClassLocalWrite},
		{"echo x > .gitignore", ClassLocalWrite},
		{"echo x > .github/workflows/ci.yml", ClassLocalWrite},
		{"echo x > *.txt", ClassLocalWrite},
		{"tar -cf a.tar ./*", ClassLocalWrite},
		{"tar -czf a.tgz .", ClassLocalWrite},
		{"tar tzf a.tgz", ClassLocalWrite},
		{"tar -xOf a.tar f", ClassLocalWrite},
		{"unzip -l a.zip", ClassSafe},
		{"unzip -p a.zip f", ClassSafe},
		{"patch f.c fix.diff", ClassLocalWrite},
		{"patch -o out.c -p1 -i fix.diff", ClassLocalWrite},
		{"env -u HOME ls", ClassSafe},
		{"unset FOO", ClassSafe},
		{"cd src && echo x > f", ClassLocalWrite},
		{"ln -s src/a b", ClassLocalWrite},
		{"git --git-dir=.git status", ClassSafe},
		{"git --git-dir sub/.git log", ClassSafe},
		{"git init -q", ClassLocalWrite},
	}
	for _, c := range same {
		if v := classifyShell(c.cmd, "/work/repo", 0); v.Class != c.class {
			t.Errorf("classify(%q) = %s (%s), want %s", c.cmd, v.Class, v.Reason, c.class)
		}
	}
}

func TestProgramFile(t *testing.T) {
	for p, want := range map[string]bool{
		".git/config": true, "a/.git/hooks/x": true, ".git": true, "/x/.git/info/attributes": true,
		".gitattributes": true, "a/.gitattributes": true, ".gitconfig": true, ".config/git/config": true,
		".cargo/config.toml": true, ".cargo/config": true, ".[g]it/config": true, ".g*/x": true,
		"": false, "git/config": false, ".gitignore": false, ".github/x": false, "x.git": false,
		"*/config": false, ".cargo/registry/x": false, "a/.gitattributes/b": false, ".config/gitx/config": false,
	} {
		if got := programFile(p) != ""; got != want {
			t.Errorf("programFile(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestFileToolsGitPaths: write_file and patch to a path where a write
// plants what git runs (by name, or through a symlink into .git) need
// code_execution's approval, confined or not; other writes stay
// local_write.
func TestFileToolsGitPaths(t *testing.T) {
	for _, confine := range []bool{false, true} {
		dir := t.TempDir()
		for _, d := range []string{".git/hooks", "src"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(".git", filepath.Join(dir, "g")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../.git/hooks", filepath.Join(dir, "src", "h")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(".git/config", filepath.Join(dir, "cfg")); err != nil {
			t.Fatal(err)
		}
		// The shell's Assess looks through existing symlinks too.
		sh := builtin(t, Options{WorkDir: dir, Confine: confine}, "shell")
		for cmd, want := range map[string]Class{
			"echo x >> cfg":                   ClassCodeExecution,
			"echo x > g/config":               ClassCodeExecution,
			"cp h src/h/pre-commit":           ClassCodeExecution,
			"echo x > " + dir + "/cfg":        ClassCodeExecution,
			"echo x > src/new.txt":            ClassLocalWrite,
			"echo x > g.txt; echo y > cfg.go": ClassLocalWrite,
		} {
			in, _ := json.Marshal(map[string]string{"command": cmd})
			if a, err := sh.Assess(in); err != nil || a.Class != want {
				t.Errorf("confine=%v shell %q = %s, %v; want %s", confine, cmd, a.Class, err, want)
			}
		}
		for _, name := range []string{"write_file", "patch"} {
			tool := builtin(t, Options{WorkDir: dir, Confine: confine}, name)
			for p, want := range map[string]Class{
				".git/config":                     ClassCodeExecution,
				".git/hooks/pre-commit":           ClassCodeExecution,
				filepath.Join(dir, ".git/config"): ClassCodeExecution,
				"src/../.git/config":              ClassCodeExecution,
				".gitattributes":                  ClassCodeExecution,
				"sub/.gitattributes":              ClassCodeExecution,
				".cargo/config.toml":              ClassCodeExecution,
				"g/config":                        ClassCodeExecution,
				"src/h/pre-commit":                ClassCodeExecution,
				"src/main.go":                     ClassLocalWrite,
				".gitignore":                      ClassLocalWrite,
				"g.txt":                           ClassLocalWrite,
				"cfg":                             ClassCodeExecution,
			} {
				in, _ := json.Marshal(map[string]string{"path": p, "content": "x", "old_string": "a", "new_string": "b"})
				a, err := tool.Assess(in)
				if err != nil {
					t.Fatal(err)
				}
				if a.Class != want {
					t.Errorf("confine=%v %s %s = %s, want %s", confine, name, p, a.Class, want)
				}
			}
		}
	}
}

// FuzzProgramFile: a path with a .git component (any case) is always a
// program file, and a redirection to any program file is at least
// code_execution whatever its spelling.
func FuzzProgramFile(f *testing.F) {
	for _, s := range []string{".git/config", "a/.GIT/hooks/x", ".gitattributes", "x/./.git", ".g?t/config",
		"{.git,a}/config", ".cargo/config.toml", ".config/git/config", "src/main.go", "../.git/x", "/abs/.git/config", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		what := programFile(p)
		for _, comp := range strings.Split(p, "/") {
			if strings.EqualFold(comp, ".git") && what == "" {
				t.Fatalf("programFile(%q) = \"\" with a .git component", p)
			}
		}
		if what == "" || strings.ContainsAny(p, "\x00\n") || !utf8.ValidString(p) {
			return
		}
		line := "echo x > " + shellQuote(p)
		if v := classifyShell(line, "/work/repo", 0); Severity(v.Class) < Severity(ClassCodeExecution) {
			t.Fatalf("classify(%q) = %s (%s), want at least code_execution", line, v.Class, v.Reason)
		}
	})
}

// git archive -o and format-patch -o write files: outside the root they
// are system writes, never safe.
func TestClassifyGitOutputOptions(t *testing.T) {
	for _, line := range []string{"git archive -o ../../x HEAD", "git archive -o/etc/x HEAD", "git archive --output=/etc/x HEAD", "git format-patch -o /etc/p HEAD~1"} {
		if v := ClassifyShell(line); v.Class == ClassSafe || v.Class == ClassLocalWrite {
			t.Errorf("%q: %s (%s), want a write outside the root", line, v.Class, v.Reason)
		}
	}
	if v := ClassifyShell("git archive -o out.tar HEAD"); v.Class != ClassLocalWrite {
		t.Errorf("git archive -o out.tar: %s (%s), want local_write", v.Class, v.Reason)
	}
}
