package subagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/artifactstore"
)

// stageFiles stages files in a new workspace and returns the workspace,
// the staging directory (workspace-relative) and an artifact root.
func stageFiles(t *testing.T, files map[string]string) (work, stage, root string) {
	t.Helper()
	work = t.TempDir()
	stage = StageDir + "/t1"
	root = filepath.Join(t.TempDir(), "root")
	os.MkdirAll(filepath.Join(work, stage), 0o700)
	for name, content := range files {
		p := filepath.Join(work, stage, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return work, stage, root
}

func TestCollectArtifactsMovesAndMeasures(t *testing.T) {
	work, stage, root := stageFiles(t, map[string]string{"a.txt": "alpha", "sub/b.json": `{"b":1}`})
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("do not return"), 0o600)
	if err := os.Symlink(secret, filepath.Join(work, stage, "link.txt")); err != nil {
		t.Fatal(err)
	}
	refs, err := CollectArtifacts(work, stage, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0].ID != "a.txt" || refs[1].ID != "sub/b.json" {
		t.Fatalf("refs %+v (symlinks must be skipped)", refs)
	}
	sum := sha256.Sum256([]byte("alpha"))
	if refs[0].SHA256 != hex.EncodeToString(sum[:]) || *refs[0].SizeBytes != 5 || !strings.HasPrefix(refs[0].MediaType, "text/plain") {
		t.Fatalf("measured %+v", refs[0])
	}
	if _, err := os.Stat(filepath.Join(work, stage)); !os.IsNotExist(err) {
		t.Fatal("staging directory not removed")
	}
	fi, err := os.Stat(filepath.Join(root, "a.txt"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("moved file %v %v", fi, err)
	}
	// The parent accepts exactly these refs against the root.
	d := NewDelegateTool(Options{})
	got, inline, err := d.acceptArtifacts("t1-x", root, refs)
	if err != nil || len(got) != 2 || inline["t1-x/a.txt"] != "alpha" {
		t.Fatalf("accept: %v %+v %v", err, got, inline)
	}
}

func TestCollectArtifactsLimit(t *testing.T) {
	files := map[string]string{}
	for i := range MaxArtifactsPerTask + 1 {
		files[filepath.Join("f", strings.Repeat("x", i+1))] = "x"
	}
	work, stage, root := stageFiles(t, files)
	if _, err := CollectArtifacts(work, stage, root); !errors.Is(err, ErrArtifacts) || !strings.Contains(err.Error(), "limit 64") {
		t.Fatalf("err %v", err)
	}
}

func TestTamperedArtifactRejected(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, root string, refs []artifacts.RefSpec)
		want   error
	}{
		{"content changed after measuring", func(t *testing.T, root string, _ []artifacts.RefSpec) {
			os.WriteFile(filepath.Join(root, "r.txt"), []byte("evil!"), 0o600) // same size, other bytes
		}, artifacts.ErrHashMismatch},
		{"size changed", func(t *testing.T, root string, _ []artifacts.RefSpec) {
			os.WriteFile(filepath.Join(root, "r.txt"), []byte("longer text"), 0o600)
		}, artifacts.ErrSizeMismatch},
		{"uri points outside the task root", func(t *testing.T, _ string, refs []artifacts.RefSpec) {
			other := filepath.Join(t.TempDir(), "r.txt")
			os.WriteFile(other, []byte("hello"), 0o600)
			refs[0].URI = "file://" + other
		}, artifacts.ErrOutsideRoots},
		{"file swapped for a symlink", func(t *testing.T, root string, _ []artifacts.RefSpec) {
			other := filepath.Join(t.TempDir(), "r.txt")
			os.WriteFile(other, []byte("hello"), 0o600)
			p := filepath.Join(root, "r.txt")
			os.Remove(p)
			os.Symlink(other, p)
		}, artifacts.ErrOutsideRoots},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work, stage, root := stageFiles(t, map[string]string{"r.txt": "hello"})
			refs, err := CollectArtifacts(work, stage, root)
			if err != nil {
				t.Fatal(err)
			}
			tt.tamper(t, root, refs)
			store := &artifactstore.Store{}
			d := NewDelegateTool(Options{Store: store})
			_, _, err = d.acceptArtifacts("t1-x", root, refs)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if len(store.IDs()) != 0 {
				t.Fatal("a rejected artifact was registered")
			}
			out := d.render([]outcome{{index: 0, taskID: "t1-x", res: &Result{Status: StatusSuccess}, artErr: err}})
			if !strings.Contains(out.Text, "artifacts rejected (none accepted)") || strings.Contains(out.Text, root) {
				t.Fatalf("render: %s", out.Text)
			}
		})
	}
}

func TestLargeArtifactsAreRegisteredNotInlined(t *testing.T) {
	big := strings.Repeat("y", InlineMaxBytes+1)
	work, stage, root := stageFiles(t, map[string]string{"big.txt": big, "small.bin": "\x00\x01\x02"})
	refs, err := CollectArtifacts(work, stage, root)
	if err != nil {
		t.Fatal(err)
	}
	store := &artifactstore.Store{}
	d := NewDelegateTool(Options{Store: store})
	got, inline, err := d.acceptArtifacts("t2-y", root, refs)
	if err != nil || len(got) != 2 || len(inline) != 0 {
		t.Fatalf("%v %d %v", err, len(got), inline)
	}
	if ids := strings.Join(store.IDs(), ","); ids != "t2-y/big.txt,t2-y/small.bin" {
		t.Fatalf("registered %s", ids)
	}
	p, err := store.Read("t2-y/big.txt", int64(InlineMaxBytes), 100)
	if err != nil || string(p.Data) != "y" || p.More() {
		t.Fatalf("page %+v %v", p, err)
	}
}

func TestDelegateRefusesAtMaxDepth(t *testing.T) {
	d := NewDelegateTool(Options{Depth: 2, Executable: "/nonexistent/odek"})
	res, err := d.Run(context.Background(), []byte(`{"tasks":[{"goal":"g"}]}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "depth 2") || !strings.Contains(res.Text, "max_depth is 2") {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestStuckChildKilledAtTimeout: a child that ignores its own timeout and
// SIGTERM is killed with its whole process group once the task timeout
// (plus grace) has passed.
func TestStuckChildKilledAtTimeout(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	script := filepath.Join(dir, "stuck-odek")
	os.WriteFile(script, []byte("#!/bin/sh\ntrap '' TERM\nsleep 60 &\necho $! > "+pidFile+"\nwait\n"), 0o700)
	d := NewDelegateTool(Options{Executable: script, Environ: []string{"PATH=" + os.Getenv("PATH")},
		Settings: Settings{TaskTimeoutSeconds: 0.2}, Emit: func(context.Context, events.Type, map[string]any) {}})
	d.killGrace = 100 * time.Millisecond
	res, err := d.Run(context.Background(), []byte(`{"tasks":[{"goal":"hang"}]}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "timed out") || !strings.Contains(res.Text, "did not finish within 0.3s") {
		t.Fatalf("%+v %v", res, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

func TestStagingRefusesSymlinkedPath(t *testing.T) {
	work := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(work, ".odek")); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareStage(work, "t1"); !errors.Is(err, ErrArtifacts) || !strings.Contains(err.Error(), `.odek/stage/t1 is not a plain directory`) {
		t.Fatalf("err %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatal("staging followed the symlink")
	}
	work2 := t.TempDir()
	rel, err := prepareStage(work2, "t2")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work2, rel)
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("left over"), 0o600)
	os.MkdirAll(filepath.Join(dir, "old", "deeper"), 0o700)
	os.Symlink(elsewhere, filepath.Join(dir, "link"))
	if rel2, err := prepareStage(work2, "t2"); err != nil || rel2 != rel {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatal("leftovers not cleared")
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

// Children of one delegate_tasks call share the work directory and create
// their staging directories at the same moment; none may lose the race.
func TestPrepareStageConcurrentSiblings(t *testing.T) {
	for round := range 20 {
		work := t.TempDir()
		const n = 8
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := range n {
			go func() {
				<-start
				_, err := prepareStage(work, fmt.Sprintf("t%d", i))
				errs <- err
			}()
		}
		close(start)
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// A staged hard link to a file outside the workspace must not let the
// move change that file: the artifact gets an inode of its own, and the
// other name keeps its mode and content.
func TestCollectArtifactsHardLinkLeavesOriginal(t *testing.T) {
	work, stage, root := stageFiles(t, map[string]string{"a.txt": "alpha"})
	orig := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(orig, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(orig, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(orig, filepath.Join(work, stage, "tool.sh")); err != nil {
		t.Skipf("hard links unsupported here: %v", err)
	}
	refs, err := CollectArtifacts(work, stage, root)
	if err != nil {
		t.Fatalf("CollectArtifacts: %v", err)
	}
	if len(refs) != 2 {
		t.Fatalf("got %d refs, want 2", len(refs))
	}
	fi, err := os.Stat(orig)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("original file mode changed to %v by the move, want 0755", fi.Mode().Perm())
	}
	moved := filepath.Join(root, "tool.sh")
	mi, err := os.Stat(moved)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(fi, mi) {
		t.Errorf("artifact %s shares its inode with %s; a write through either name changes the validated artifact", moved, orig)
	}
	if mi.Mode().Perm() != 0o600 {
		t.Errorf("artifact mode %v, want 0600", mi.Mode().Perm())
	}
	// Writing through the original name must not change the artifact.
	if err := os.WriteFile(orig, []byte("#!/bin/sh\necho XX\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(moved); string(b) != "#!/bin/sh\necho hi\n" {
		t.Errorf("artifact content %q changed through the other link", b)
	}
}

// readVerified inlines only the regular file that was validated: a
// symlink swapped in at the validated path after validation (same size,
// no digest to catch it) is not followed.
func TestReadVerifiedRefusesSwappedSymlink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.txt")
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	if text, ok := readVerified(artifacts.Ref{ID: "t/a.txt", Path: p, SizeBytes: 6}); ok {
		t.Fatalf("readVerified followed a symlink and returned %q", text)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("plain!"), 0o600); err != nil {
		t.Fatal(err)
	}
	if text, ok := readVerified(artifacts.Ref{ID: "t/a.txt", Path: p, SizeBytes: 6}); !ok || text != "plain!" {
		t.Fatalf("readVerified(regular file) = %q, %v; want \"plain!\", true", text, ok)
	}
}

// TestChildExitNotHeldByEscapedGrandchild: a child that prints its result
// and exits, leaving a process outside its group (setsid) that still holds
// its stdout, is read as finished, not waited on until the task timeout.
func TestChildExitNotHeldByEscapedGrandchild(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "escaped.pid")
	script := filepath.Join(dir, "odek")
	os.WriteFile(script, []byte("#!/bin/sh\nsetsid sh -c 'echo $$ > "+pidFile+"; exec sleep 30' &\n"+
		`echo '{"status":"success","summary":"done","iterations":1}'`+"\n"), 0o700)
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	d := NewDelegateTool(Options{Executable: script, Environ: []string{"PATH=" + os.Getenv("PATH")},
		Settings: Settings{TaskTimeoutSeconds: 20}, Emit: func(context.Context, events.Type, map[string]any) {}})
	d.killGrace = 100 * time.Millisecond
	res, err := d.Run(context.Background(), []byte(`{"tasks":[{"goal":"g"}]}`))
	if err != nil || res.IsError || !strings.Contains(res.Text, ": success") || strings.Contains(res.Text, "timed out") {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestDelegateClampsMaxRiskToOwnCeiling: a child that runs under max_risk
// X passes at most X on to its own children. Without the clamp a task
// with no max_risk (or a more severe one) gave the grandchild the whole
// operator policy, escaping the ceiling the top-level agent set.
func TestDelegateClampsMaxRiskToOwnCeiling(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "odek")
	// argv: subagent --task FILE --api-key-fd 3
	os.WriteFile(script, []byte("#!/bin/sh\ncp \"$3\" \""+dir+"/task-$$.json\"\necho '{\"status\":\"success\"}'\n"), 0o700)
	d := NewDelegateTool(Options{Executable: script, Environ: []string{"PATH=" + os.Getenv("PATH")}, MaxRisk: "local_write",
		Emit: func(context.Context, events.Type, map[string]any) {}})
	res, err := d.Run(context.Background(), []byte(`{"tasks":[{"goal":"a"},{"goal":"b","max_risk":"code_execution"},{"goal":"c","max_risk":"safe"}]}`))
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "task-*.json"))
	if len(files) != 3 {
		t.Fatalf("%d task files, want 3", len(files))
	}
	got := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := ParseTask(b)
		if err != nil {
			t.Fatal(err)
		}
		got[tk.Goal] = tk.MaxRisk
	}
	want := map[string]string{"a": "local_write", "b": "local_write", "c": "safe"}
	for g, w := range want {
		if got[g] != w {
			t.Errorf("task %q: max_risk %q, want %q", g, got[g], w)
		}
	}
}

func TestClampRisk(t *testing.T) {
	tests := []struct{ req, ceiling, want string }{
		{"", "", ""},
		{"code_execution", "", "code_execution"},
		{"", "local_write", "local_write"},
		{"destructive", "local_write", "local_write"},
		{"safe", "local_write", "safe"},
		{"local_write", "local_write", "local_write"},
	}
	for _, tc := range tests {
		if got := ClampRisk(tc.req, tc.ceiling); got != tc.want {
			t.Errorf("ClampRisk(%q, %q) = %q, want %q", tc.req, tc.ceiling, got, tc.want)
		}
	}
}

// A staging directory the chat filled with a FIFO, a link to a directory
// outside and a link to a file outside: CollectArtifacts returns only the
// regular file, never blocks on the FIFO, and copies nothing from outside.
func TestCollectArtifactsSkipsFIFOsAndLinks(t *testing.T) {
	work, stage, root := stageFiles(t, map[string]string{"ok.txt": "fine"})
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("other chat"), 0o600)
	if err := syscall.Mkfifo(filepath.Join(work, stage, "pipe.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(work, stage, "dir"))
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(work, stage, "file.txt"))
	refs, err := CollectArtifacts(work, stage, root)
	if err != nil || len(refs) != 1 || refs[0].ID != "ok.txt" {
		t.Fatalf("refs %+v, %v", refs, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret.txt")); err != nil {
		t.Fatalf("the outside file was touched: %v", err)
	}
}

// The staging directory itself, or a directory above it, replaced by a
// link: nothing is collected through it, and the clean-up does not follow
// it either.
func TestCollectArtifactsRefusesALinkedStage(t *testing.T) {
	for _, link := range []string{StageDir + "/t1", StageDir, ".odek"} {
		t.Run(link, func(t *testing.T) {
			work, stage, root := stageFiles(t, nil)
			outside := t.TempDir()
			os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("other chat"), 0o600)
			os.MkdirAll(filepath.Join(outside, "t1"), 0o700)
			os.MkdirAll(filepath.Join(outside, "stage", "t1"), 0o700)
			os.WriteFile(filepath.Join(outside, "t1", "secret.txt"), []byte("other chat"), 0o600)
			os.WriteFile(filepath.Join(outside, "stage", "t1", "secret.txt"), []byte("other chat"), 0o600)
			p := filepath.Join(work, filepath.FromSlash(link))
			os.RemoveAll(p)
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
			refs, err := CollectArtifacts(work, stage, root)
			if err == nil || len(refs) != 0 {
				t.Fatalf("collected through a link: %+v, %v", refs, err)
			}
			for _, f := range []string{"secret.txt", "t1/secret.txt", "stage/t1/secret.txt"} {
				if _, err := os.Stat(filepath.Join(outside, f)); err != nil {
					t.Errorf("%s outside was removed: %v", f, err)
				}
			}
			// The staging directory's own link is removed (unlinked, not
			// followed); a link above it stays and is refused.
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				if _, err := prepareStage(work, "t1"); err == nil {
					t.Error("prepareStage accepted a linked path")
				}
			} else if link != StageDir+"/t1" {
				t.Errorf("the link at %s was removed", link)
			}
		})
	}
}

// PrivateArtifactsDir lies under ODEK_HOME, 0700, fresh on every call.
func TestPrivateArtifactsDir(t *testing.T) {
	home := t.TempDir()
	a, err := PrivateArtifactsDir(home)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PrivateArtifactsDir(home)
	fi, err := os.Stat(a)
	if err != nil || fi.Mode().Perm() != 0o700 || a == b || !strings.HasPrefix(a, filepath.Join(home, PrivateDirName)+"/") {
		t.Fatalf("%s %s %v %v", a, b, fi, err)
	}
}

// BenchmarkCollectArtifacts: staging read by descriptor and copied out
// (hashing as it copies), for 8 files of 64 KiB.
func BenchmarkCollectArtifacts(b *testing.B) {
	content := strings.Repeat("z", 64<<10)
	for b.Loop() {
		b.StopTimer()
		work := b.TempDir()
		stage := StageDir + "/t1"
		os.MkdirAll(filepath.Join(work, stage), 0o700)
		for i := range 8 {
			os.WriteFile(filepath.Join(work, stage, fmt.Sprintf("f%d.txt", i)), []byte(content), 0o600)
		}
		root := filepath.Join(b.TempDir(), "root")
		b.StartTimer()
		if refs, err := CollectArtifacts(work, stage, root); err != nil || len(refs) != 8 {
			b.Fatal(refs, err)
		}
	}
}

// A run's private directories carry 128 random bits in their names, so
// another chat's confined job cannot find them by stat(2).
func TestPrivateDirsAreUnguessable(t *testing.T) {
	home := t.TempDir()
	a, err := PrivateArtifactsDir(home)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PrivateArtifactsDir(home)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(a)
	if a == b || !strings.HasPrefix(name, "run-") || len(name) != len("run-")+32 {
		t.Fatalf("private dirs %s %s", a, b)
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode: %v %v", fi, err)
	}
}
