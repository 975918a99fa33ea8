package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func builtin(t testing.TB, opts Options, name string) Tool {
	t.Helper()
	for _, tool := range Builtins(opts) {
		if tool.Definition().Name == name {
			return tool
		}
	}
	t.Fatalf("no builtin %q", name)
	return nil
}

func run(t testing.TB, tool Tool, args string) Result {
	t.Helper()
	res, err := tool.Run(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", tool.Definition().Name, args, err)
	}
	return res
}

func mustContain(t *testing.T, res Result, isErr bool, subs ...string) {
	t.Helper()
	if res.IsError != isErr {
		t.Errorf("IsError = %v, want %v; text:\n%s", res.IsError, isErr, res.Text)
	}
	for _, s := range subs {
		if !strings.Contains(res.Text, s) {
			t.Errorf("result lacks %q; text:\n%s", s, res.Text)
		}
	}
}

func TestBuiltinsDefinitions(t *testing.T) {
	want := []string{"read_file", "write_file", "list_dir", "search_files", "patch", "shell"}
	var defs []Definition
	for _, tool := range Builtins(Options{WorkDir: t.TempDir()}) {
		defs = append(defs, tool.Definition())
	}
	if len(defs) != len(want) {
		t.Fatalf("got %d definitions, want %d", len(defs), len(want))
	}
	for i, d := range defs {
		if d.Name != want[i] {
			t.Errorf("definition %d = %s, want %s", i, d.Name, want[i])
		}
		var m map[string]any
		if err := json.Unmarshal(d.Parameters, &m); err != nil || m["type"] != "object" {
			t.Errorf("%s parameters not a JSON schema object: %v %s", d.Name, err, d.Parameters)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte(b.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "bin"), []byte("abc\x00def"), 0o644)
	os.WriteFile(filepath.Join(dir, "nonl"), []byte("a\nb"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644)
	tool := builtin(t, Options{WorkDir: dir}, "read_file")

	mustContain(t, run(t, tool, `{"path":"f.txt"}`), false, "lines 1-10 of 10; end of file", "1\tline 1\n", "10\tline 10\n")
	res := run(t, tool, `{"path":"f.txt","offset":3,"limit":2,"unknown":true}`)
	mustContain(t, res, false, "lines 3-4 of 10; more remain, continue with offset=5", "3\tline 3\n4\tline 4\n")
	if strings.Contains(res.Text, "line 5") {
		t.Errorf("limit ignored:\n%s", res.Text)
	}
	mustContain(t, run(t, tool, `{"path":"nonl"}`), false, "lines 1-2 of 2", "2\tb\n")
	mustContain(t, run(t, tool, `{"path":"empty"}`), false, "empty file")
	mustContain(t, run(t, tool, `{"path":"bin"}`), true, "binary")
	mustContain(t, run(t, tool, `{"path":"f.txt","offset":11}`), true, "offset 11", "10 lines")
	mustContain(t, run(t, tool, `{}`), true, `"path"`, "required")
	mustContain(t, run(t, tool, `{"path":5}`), true, `"path"`, "string")
	mustContain(t, run(t, tool, `{"path":"f.txt","offset":"3"}`), true, `"offset"`, "integer")
	mustContain(t, run(t, tool, `{"path":"f.txt","limit":0}`), true, `"limit"`)
	mustContain(t, run(t, tool, `{"path":"missing"}`), true, "no such file")
	mustContain(t, run(t, tool, `{"path":"."}`), true, "directory")
	mustContain(t, run(t, tool, `{"path":"`+filepath.Join(dir, "f.txt")+`","offset":10}`), false, "10\tline 10")

	// The byte cap stops at a line boundary and says where to continue.
	small := builtin(t, Options{WorkDir: dir, MaxReadBytes: 30}, "read_file")
	res = run(t, small, `{"path":"f.txt"}`)
	mustContain(t, res, false, "output capped at 30 bytes", "continue with offset=")
	if body := res.Text[strings.Index(res.Text, "\n")+1:]; len(body) > 30 {
		t.Errorf("body is %d bytes, cap 30:\n%s", len(body), body)
	}
	// One line longer than the cap is cut on a rune boundary.
	os.WriteFile(filepath.Join(dir, "long"), []byte(strings.Repeat("é", 100)+"\n"), 0o644)
	res = run(t, small, `{"path":"long"}`)
	mustContain(t, res, false, "capped")
	if !utf8.ValidString(res.Text) {
		t.Errorf("invalid UTF-8: %q", res.Text)
	}

	a, err := tool.Assess(json.RawMessage(`{"path":"f.txt"}`))
	if err != nil || a.Class != ClassSafe || a.Summary["path"] != "f.txt" || a.Summary["class"] != "safe" {
		t.Errorf("Assess = %+v, %v", a, err)
	}
	if _, err := tool.Assess(json.RawMessage(`{bad`)); !errors.Is(err, ErrInvalidArgs) {
		t.Errorf("Assess(invalid JSON) err = %v, want ErrInvalidArgs", err)
	}
}

func TestWriteFileAndPatch(t *testing.T) {
	dir := t.TempDir()
	w := builtin(t, Options{WorkDir: dir}, "write_file")
	mustContain(t, run(t, w, `{"path":"a/b/c.txt","content":"hello hello world"}`), false, "wrote 17 bytes")
	got, err := os.ReadFile(filepath.Join(dir, "a/b/c.txt"))
	if err != nil || string(got) != "hello hello world" {
		t.Fatalf("file = %q, %v", got, err)
	}
	mustContain(t, run(t, w, `{"path":"x"}`), true, `"content"`)
	ents, _ := os.ReadDir(filepath.Join(dir, "a/b"))
	if len(ents) != 1 {
		t.Errorf("temp files left behind: %v", ents)
	}

	p := builtin(t, Options{WorkDir: dir}, "patch")
	mustContain(t, run(t, p, `{"path":"a/b/c.txt","old_string":"hello","new_string":"bye"}`), true, "matches 2 times")
	mustContain(t, run(t, p, `{"path":"a/b/c.txt","old_string":"nope","new_string":"bye"}`), true, "0 matches")
	mustContain(t, run(t, p, `{"path":"a/b/c.txt","old_string":"world","new_string":"there"}`), false, "replaced 1")
	mustContain(t, run(t, p, `{"path":"a/b/c.txt","old_string":"hello","new_string":"bye","replace_all":true}`), false, "replaced 2")
	got, _ = os.ReadFile(filepath.Join(dir, "a/b/c.txt"))
	if string(got) != "bye bye there" {
		t.Errorf("patched file = %q", got)
	}
	mustContain(t, run(t, p, `{"path":"a/b/c.txt","old_string":"","new_string":"x"}`), true, `"old_string"`)
	mustContain(t, run(t, p, `{"path":"a/b/c.txt","old_string":"bye","new_string":"x","replace_all":"yes"}`), true, `"replace_all"`, "boolean")

	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(dir, "link"))
	for _, tc := range []struct {
		path string
		want Class
	}{
		{"new/file.txt", ClassLocalWrite},
		{filepath.Join(dir, "x"), ClassLocalWrite},
		{"../escape", ClassSystemWrite},
		{"/etc/passwd", ClassSystemWrite},
		{"link/x", ClassSystemWrite},
	} {
		for _, tool := range []Tool{w, p} {
			a, err := tool.Assess(json.RawMessage(`{"path":` + quote(tc.path) + `}`))
			if err != nil || a.Class != tc.want || a.Summary["path"] != tc.path {
				t.Errorf("%s.Assess(%s) = %+v, %v; want %s", tool.Definition().Name, tc.path, a, err, tc.want)
			}
		}
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestListDir(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub/deep"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".git/objects"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("12345"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub/b.txt"), nil, 0o644)
	tool := builtin(t, Options{WorkDir: dir}, "list_dir")
	res := run(t, tool, `{}`)
	mustContain(t, res, false, "a.txt  5 bytes", "sub/", ".git/")
	if strings.Contains(res.Text, "b.txt") {
		t.Errorf("depth 1 listed a nested file:\n%s", res.Text)
	}
	res = run(t, tool, `{"depth":3}`)
	mustContain(t, res, false, "sub/b.txt  0 bytes", "sub/deep/")
	if strings.Contains(res.Text, "objects") {
		t.Errorf("descended into .git:\n%s", res.Text)
	}
	mustContain(t, run(t, tool, `{"depth":6}`), true, `"depth"`, "1 to 5")
	mustContain(t, run(t, tool, `{"path":"a.txt"}`), true, "not a directory")

	many := t.TempDir()
	for i := 0; i < maxListEntries+5; i++ {
		os.WriteFile(filepath.Join(many, fmt.Sprintf("f%04d", i)), nil, 0o644)
	}
	mustContain(t, run(t, builtin(t, Options{WorkDir: many}, "list_dir"), `{}`), false, "truncated at 1000 entries")
}

func TestSearchFiles(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "pkg"), 0o755)
	os.MkdirAll(filepath.Join(dir, "node_modules/x"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkg/a.go"), []byte("package pkg\nfunc Foo() {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pkg/b.txt"), []byte("Foo in text\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "node_modules/x/c.go"), []byte("func Foo()\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("Foo\x00"), 0o644)
	tool := builtin(t, Options{WorkDir: dir}, "search_files")
	res := run(t, tool, `{"pattern":"Fo+"}`)
	mustContain(t, res, false, "pkg/a.go:2: func Foo() {}", "pkg/b.txt:1: Foo in text", "2 matches")
	if strings.Contains(res.Text, "node_modules") || strings.Contains(res.Text, "bin.dat") {
		t.Errorf("searched skipped files:\n%s", res.Text)
	}
	res = run(t, tool, `{"pattern":"Foo","glob":"*.go"}`)
	mustContain(t, res, false, "pkg/a.go:2")
	if strings.Contains(res.Text, "b.txt") {
		t.Errorf("glob ignored:\n%s", res.Text)
	}
	mustContain(t, run(t, tool, `{"pattern":"Foo","max_matches":1}`), false, "stopped at the limit of 1")
	mustContain(t, run(t, tool, `{"pattern":"("}`), true, `"pattern"`, "invalid regular expression")
	mustContain(t, run(t, tool, `{"pattern":"zzz"}`), false, "no matches")
	mustContain(t, run(t, tool, `{"pattern":"x","glob":"["}`), true, `"glob"`)
}

func TestShell(t *testing.T) {
	dir := t.TempDir()
	tool := builtin(t, Options{WorkDir: dir, Env: []string{"PATH=" + os.Getenv("PATH"), "GREETING=hi"}}, "shell")
	res := run(t, tool, `{"command":"pwd; echo $GREETING; echo oops >&2"}`)
	mustContain(t, res, false, "exit code: 0", dir, "hi\n", "stderr:\noops")

	res = run(t, tool, `{"command":"echo out; exit 3"}`)
	mustContain(t, res, true, "exit code: 3", "out")

	mustContain(t, run(t, tool, `{}`), true, `"command"`)
	mustContain(t, run(t, tool, `{"command":"ls","timeout_seconds":-1}`), true, `"timeout_seconds"`)
	mustContain(t, run(t, tool, `{"command":"ls","timeout_seconds":100000}`), true, `"timeout_seconds"`, "600")

	a, err := tool.Assess(json.RawMessage(`{"command":"FOO=1 rm -rf build"}`))
	if err != nil || a.Class != ClassDestructive || a.Summary["argv0"] != "rm" || a.Summary["class"] != "destructive" {
		t.Errorf("Assess = %+v, %v", a, err)
	}
	a, _ = tool.Assess(json.RawMessage(`{"command":"echo x > ` + filepath.Join(dir, "f") + `"}`))
	if a.Class != ClassLocalWrite {
		t.Errorf("redirect into WorkDir by absolute path = %s, want local_write", a.Class)
	}
}

func TestShellSecretEnvFiltered(t *testing.T) {
	t.Setenv("ODEK_TEST_API_KEY", "s3cret")
	t.Setenv("ODEK_TEST_PLAIN", "visible")
	tool := builtin(t, Options{WorkDir: t.TempDir()}, "shell")
	res := run(t, tool, `{"command":"env"}`)
	mustContain(t, res, false, "ODEK_TEST_PLAIN=visible")
	if strings.Contains(res.Text, "s3cret") {
		t.Errorf("secret variable reached the shell")
	}
}

// Issue 21 (compose): the queue's URL carries Redis' password in a
// worker's environment; a job's shell — here unconfined, the case the
// sandbox's own allowlist (sandbox.Env) does not cover — sees neither
// REDIS_URL nor any URL with credentials under another name.
func TestShellEnvHasNoRedisURLOrURLCredentials(t *testing.T) {
	t.Setenv("REDIS_URL", "redis://:redis-pw-0123456789@redis:6379/0")
	t.Setenv("ODEK_TEST_DB", "postgres://app:db-pw-0123456789@db/app")
	t.Setenv("ODEK_TEST_SITE", "https://example.org/a@b")
	tool := builtin(t, Options{WorkDir: t.TempDir()}, "shell")
	res := run(t, tool, `{"command":"env"}`)
	mustContain(t, res, false, "ODEK_TEST_SITE=https://example.org/a@b")
	for _, leak := range []string{"REDIS_URL", "redis-pw", "db-pw"} {
		if strings.Contains(res.Text, leak) {
			t.Errorf("the shell's environment holds %q", leak)
		}
	}
}

func TestURLWithCredentials(t *testing.T) {
	for v, want := range map[string]bool{
		"redis://:pw@redis:6379/0": true, "rediss://user:pw@h": true, "https://token@github.com/x": true,
		"x https://a@b": true, "redis://redis:6379/0": false, "https://example.org/a@b": false,
		"https://h/?q=a@b": false, "mailto:a@b": false, "": false, "://@": true,
	} {
		if got := urlWithCredentials(v); got != want {
			t.Errorf("urlWithCredentials(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestShellTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	tool := builtin(t, Options{WorkDir: dir}, "shell")
	start := time.Now()
	// The grandchildren write their pid; after the kill they must be gone.
	res := run(t, tool, `{"command":"sleep 100 & echo $! > pid; sleep 100","timeout_seconds":0.5}`)
	mustContain(t, res, true, "timed out after 500ms", "timeout_seconds limit 0.5")
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("timeout took %s", d)
	}
	pidText, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, strings.TrimSpace(string(pidText)))
}

// waitGone polls until the process is gone (or a zombie), with a deadline.
func waitGone(t *testing.T, pid string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %s survived the group kill", pid)
}

func TestShellContextCancel(t *testing.T) {
	dir := t.TempDir()
	tool := builtin(t, Options{WorkDir: dir}, "shell")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := tool.Run(ctx, json.RawMessage(`{"command":"sleep 100 & echo $! > pid; sleep 100"}`))
		done <- out{res, err}
	}()
	// Cancel once the command is running (the pid file appears).
	pidFile := filepath.Join(dir, "pid")
	deadline := time.Now().Add(10 * time.Second)
	var pid []byte
	for {
		b, err := os.ReadFile(pidFile)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	o := <-done
	if !errors.Is(o.err, context.Canceled) || !o.res.IsError || !strings.Contains(o.res.Text, "cancelled") {
		t.Errorf("Run after cancel = %+v, %v; want IsError, a cancel note and context.Canceled", o.res, o.err)
	}
	waitGone(t, strings.TrimSpace(string(pid)))
}

func TestShellOutputCapped(t *testing.T) {
	tool := builtin(t, Options{WorkDir: t.TempDir(), MaxStreamBytes: 64 << 10}, "shell")
	res := run(t, tool, `{"command":"head -c 5242880 /dev/zero | tr '\\0' a; echo END"}`)
	mustContain(t, res, false, "exit code: 0", "bytes dropped", "END")
	if len(res.Text) > 70<<10 {
		t.Errorf("result is %d bytes, stream cap 64 KiB", len(res.Text))
	}
	want := fmt.Sprintf("[... %d bytes dropped ...]", 5<<20+4-64<<10)
	mustContain(t, res, false, want)
}
