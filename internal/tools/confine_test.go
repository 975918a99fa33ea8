package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the sandboxed shell re-executes this test binary as its helper
	os.Exit(m.Run())
}

// tenants is an artifacts directory with two chats: 1 holds notes.txt,
// 2 is the confined run's root, with links planted towards chat 1.
type tenants struct {
	dir, a, b string
}

func newTenants(t *testing.T) tenants {
	t.Helper()
	dir := t.TempDir()
	tn := tenants{dir: dir, a: filepath.Join(dir, "1"), b: filepath.Join(dir, "2")}
	for _, d := range []string{tn.a, tn.b, filepath.Join(tn.b, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tn.a, "notes.txt"), "chat one secret\n")
	write(filepath.Join(tn.b, "own.txt"), "chat two text\n")
	for name, dest := range map[string]string{
		"link-file":  filepath.Join(tn.a, "notes.txt"),
		"link-dir":   tn.a,
		"link-rel":   "../1/notes.txt",
		"sub/up":     "../../1",
		"link-own":   "own.txt",
		"link-inabs": filepath.Join(tn.b, "own.txt"),
	} {
		if err := os.Symlink(dest, filepath.Join(tn.b, name)); err != nil {
			t.Fatal(err)
		}
	}
	return tn
}

func TestConfinedFileTools(t *testing.T) {
	tn := newTenants(t)
	opts := Options{WorkDir: tn.b, Confine: true}
	esc := func(s string) string { b, _ := jsonString(s); return b }
	tests := []struct {
		tool, args string
		ok         bool
	}{
		{"read_file", `{"path":"own.txt"}`, true},
		{"read_file", `{"path":` + esc(filepath.Join(tn.b, "own.txt")) + `}`, true},
		{"read_file", `{"path":"link-own"}`, true},
		{"read_file", `{"path":"link-inabs"}`, false}, // os.Root refuses every absolute link
		{"read_file", `{"path":"../1/notes.txt"}`, false},
		{"read_file", `{"path":` + esc(filepath.Join(tn.a, "notes.txt")) + `}`, false},
		{"read_file", `{"path":"sub/../../1/notes.txt"}`, false},
		{"read_file", `{"path":"link-file"}`, false},
		{"read_file", `{"path":"link-dir/notes.txt"}`, false},
		{"read_file", `{"path":"link-rel"}`, false},
		{"read_file", `{"path":"sub/up/notes.txt"}`, false},
		{"read_file", `{"path":"~/notes.txt"}`, false},
		{"read_file", `{"path":"/etc/passwd"}`, false},
		{"read_file", `{"path":"/proc/self/environ"}`, false},
		{"list_dir", `{"path":"."}`, true},
		{"list_dir", `{"path":".."}`, false},
		{"list_dir", `{"path":"/"}`, false},
		{"list_dir", `{"path":"link-dir"}`, false},
		{"search_files", `{"pattern":"secret","path":".."}`, false},
		{"search_files", `{"pattern":"secret","path":"link-dir"}`, false},
		{"search_files", `{"pattern":"secret"}`, true}, // walks its own root; links are not followed
		{"write_file", `{"path":"new.txt","content":"x"}`, true},
		{"write_file", `{"path":"../1/notes.txt","content":"overwritten"}`, false},
		{"write_file", `{"path":"link-file","content":"overwritten"}`, false},
		{"write_file", `{"path":"link-dir/planted.txt","content":"x"}`, false},
		{"write_file", `{"path":"sub/up/planted.txt","content":"x"}`, false},
		{"patch", `{"path":"../1/notes.txt","old_string":"secret","new_string":"gone"}`, false},
		{"patch", `{"path":"link-rel","old_string":"secret","new_string":"gone"}`, false},
		{"patch", `{"path":"own.txt","old_string":"two","new_string":"2"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			res := run(t, builtin(t, opts, tt.tool), tt.args)
			if res.IsError == tt.ok {
				t.Fatalf("IsError = %v, want ok=%v:\n%s", res.IsError, tt.ok, res.Text)
			}
			if strings.Contains(res.Text, "chat one secret") {
				t.Fatalf("the other chat's data reached the model:\n%s", res.Text)
			}
			if !tt.ok && !strings.Contains(res.Text, "outside this job's root "+tn.b) {
				t.Errorf("the error does not name the root:\n%s", res.Text)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(tn.a, "notes.txt")); err != nil || string(b) != "chat one secret\n" {
		t.Errorf("chat 1's file changed: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(tn.a); len(ents) != 1 {
		t.Errorf("files planted in chat 1: %v", ents)
	}
	// A write through a link inside the root changes the linked file.
	run(t, builtin(t, opts, "write_file"), `{"path":"link-own","content":"via link\n"}`)
	if b, _ := os.ReadFile(filepath.Join(tn.b, "own.txt")); string(b) != "via link\n" {
		t.Errorf("own.txt after a write through link-own: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(tn.b, "link-own")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link-own is no longer a link: %v %v", fi, err)
	}
}

func TestConfinedWriteAssessment(t *testing.T) {
	tn := newTenants(t)
	w := builtin(t, Options{WorkDir: tn.b, Confine: true}, "write_file")
	for args, want := range map[string]Class{
		`{"path":"x.txt"}`:        ClassLocalWrite,
		`{"path":"../1/x.txt"}`:   ClassSystemWrite,
		`{"path":"/etc/x"}`:       ClassSystemWrite,
		`{"path":"sub/../x.txt"}`: ClassLocalWrite,
	} {
		a, err := w.Assess([]byte(args))
		if err != nil || a.Class != want {
			t.Errorf("Assess(%s) = %v, %v; want %s", args, a.Class, err, want)
		}
	}
}

func TestLocate(t *testing.T) {
	root := "/srv/chats/2"
	tests := []struct{ in, want string }{
		{"", "."}, {".", "."}, {"a.txt", "a.txt"}, {"a/../b", "b"}, {"/srv/chats/2", "."},
		{"/srv/chats/2/x/y", filepath.Join("x", "y")}, {"./x//y/", filepath.Join("x", "y")},
		{"..", ""}, {"../1/a", ""}, {"/srv/chats/1/a", ""}, {"/srv/chats/22", ""}, {"~", ""}, {"~/a", ""},
		{"/", ""}, {"a/../../x", ""}, {"x\x00y", ""},
	}
	for _, tt := range tests {
		got, err := Locate(root, tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Locate(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Locate(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func FuzzLocate(f *testing.F) {
	for _, s := range []string{"a", "../b", "/srv/chats/2/c", "/srv/chats/1", "~/x", "a/../../b", "./././..", "/srv/chats/2/../2/x", "", "x\x00"} {
		f.Add(s)
	}
	const root = "/srv/chats/2"
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := Locate(root, p)
		if err != nil {
			return
		}
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || strings.ContainsRune(rel, 0) {
			t.Fatalf("Locate(%q) = %q leaves the root", p, rel)
		}
		if full := filepath.Join(root, rel); full != root && !strings.HasPrefix(full, root+"/") {
			t.Fatalf("Locate(%q) = %q resolves to %s", p, rel, full)
		}
	})
}

func TestSandboxedShell(t *testing.T) {
	if abi := sandbox.ABI(); abi < sandbox.RequiredABI {
		if os.Getenv("ODEK_REQUIRE_LANDLOCK") != "" {
			t.Fatalf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
		}
		t.Skipf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
	}
	tn := newTenants(t)
	tmp := t.TempDir()
	spec, err := sandbox.NewSpec(sandbox.Settings{}, sandbox.Paths{Root: tn.b, TempDir: tmp, Deny: []string{tn.dir}}, sandbox.Host)
	if err != nil {
		t.Fatal(err)
	}
	jail, err := sandbox.NewJail(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer jail.Close()
	sh := builtin(t, Options{WorkDir: tn.b, Confine: true, Sandbox: jail, Env: []string{"PATH=/usr/bin:/bin", "REDIS_URL=redis://:pw@h:6379"}}, "shell")
	if !strings.Contains(sh.Definition().Description, "sandbox") {
		t.Errorf("the description does not mention the sandbox: %s", sh.Definition().Description)
	}
	for _, tt := range []struct {
		cmd string
		ok  bool
	}{
		{"cat own.txt && echo w > w.txt", true},
		{"cat ../1/notes.txt", false},
		{"cat link-file", false},
		{"cp ../1/notes.txt .", false},
		{"env | grep REDIS", false},
		{fmt.Sprintf("cat /proc/%d/environ", os.Getpid()), false},
	} {
		res := run(t, sh, fmt.Sprintf(`{"command":%q}`, tt.cmd))
		if res.IsError == tt.ok || strings.Contains(res.Text, "chat one secret") || strings.Contains(res.Text, ":pw@") {
			t.Errorf("%q: ok=%v, want %v\n%s", tt.cmd, !res.IsError, tt.ok, res.Text)
		}
	}
}

func jsonString(s string) (string, error) {
	return fmt.Sprintf("%q", s), nil
}
