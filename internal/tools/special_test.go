//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hangGuard is how long a file tool may take before a test calls it
// stuck. It is not a speed goal: every call below returns in well under
// a second; on the old code they blocked in open(2) or read for minutes.
const hangGuard = 30 * time.Second

// runGuarded runs tool with ctx and fails t when the call has not
// returned within hangGuard.
func runGuarded(t *testing.T, ctx context.Context, tool Tool, args string) (Result, error) {
	t.Helper()
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := tool.Run(ctx, json.RawMessage(args))
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(hangGuard):
		t.Fatalf("%s(%s) still running after %v: it blocks", tool.Definition().Name, args, hangGuard)
		return Result{}, nil
	}
}

// specialFiles makes, in dir, a FIFO, a Unix socket and (when the test
// may create device nodes) a character device with /dev/null's numbers,
// and returns their names with the type a refusal must name.
func specialFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{"fifo": "FIFO", "sock": "socket"}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A socket path must fit in sun_path (108 bytes); bind from inside dir.
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", "sock")
	os.Chdir(wd)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
	if err := unix.Mknod(filepath.Join(dir, "dev"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
		files["dev"] = "character device"
	} else {
		t.Logf("no device node (%v): the device case is not run", err)
	}
	// Release a reader the old code left blocked in open(2) or read(2) on
	// the FIFO: a writer that opens and closes it gives it EOF.
	t.Cleanup(func() {
		if fd, err := unix.Open(filepath.Join(dir, "fifo"), unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
	})
	return files
}

// Every file tool refuses a FIFO, a socket and a device with an error that
// names the path and its type, and never blocks on one; confined (through
// os.Root) and unconfined alike.
func TestFileToolsRefuseSpecialFiles(t *testing.T) {
	for _, confine := range []bool{true, false} {
		t.Run(fmt.Sprintf("confine=%v", confine), func(t *testing.T) {
			dir := t.TempDir()
			files := specialFiles(t, dir)
			opts := Options{WorkDir: dir, Confine: confine}
			for name, typ := range files {
				for _, tc := range []struct{ tool, args string }{
					{"read_file", `{"path":"` + name + `"}`},
					{"patch", `{"path":"` + name + `","old_string":"a","new_string":"b"}`},
					{"write_file", `{"path":"` + name + `","content":"x"}`},
					{"list_dir", `{"path":"` + name + `"}`},
					{"search_files", `{"pattern":"a","path":"` + name + `"}`},
				} {
					t.Run(tc.tool+" "+name, func(t *testing.T) {
						res, err := runGuarded(t, context.Background(), builtin(t, opts, tc.tool), tc.args)
						if err != nil {
							t.Fatal(err)
						}
						if !res.IsError || !strings.Contains(res.Text, name) || !strings.Contains(res.Text, typ) {
							t.Errorf("want an error naming %s and %q, got IsError=%v:\n%s", name, typ, res.IsError, res.Text)
						}
					})
				}
				fi, err := os.Lstat(filepath.Join(dir, name))
				if err != nil || fi.Mode().IsRegular() {
					t.Errorf("%s was replaced: %v %v", name, fi, err)
				}
			}
		})
	}
}

// search_files walks past FIFOs and sockets (without opening them) and
// still finds what is in the regular files; list_dir marks them.
func TestSearchAndListSkipSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	files := specialFiles(t, dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("Foo\n"), 0o644)
	for _, confine := range []bool{true, false} {
		opts := Options{WorkDir: dir, Confine: confine}
		res, err := runGuarded(t, context.Background(), builtin(t, opts, "search_files"), `{"pattern":"Foo"}`)
		if err != nil || res.IsError || !strings.Contains(res.Text, "a.txt:1: Foo") || !strings.Contains(res.Text, "1 files searched") {
			t.Errorf("search_files (confine=%v) = %v\n%s", confine, err, res.Text)
		}
		res, _ = runGuarded(t, context.Background(), builtin(t, opts, "list_dir"), `{}`)
		for name, typ := range files {
			if !strings.Contains(res.Text, name+"  ["+typ+"]") {
				t.Errorf("list_dir (confine=%v) does not mark %s as a %s:\n%s", confine, name, typ, res.Text)
			}
		}
	}
}

// sparse makes a file of size bytes that starts with head and is a hole
// after it (os.Truncate: nothing is written), so a 400 GiB file costs no
// disk.
func sparse(t *testing.T, path, head string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Skipf("this file system cannot hold a sparse file of %d bytes: %v", size, err)
	}
}

// A 400 GiB sparse file whose first 9000 bytes are text (so it passes the
// binary sniff) and which has no newline: read_file returns after its
// per-call read limit instead of reading 400 GiB, says it stopped
// counting, and shows the start of the one line.
func TestReadFileHugeSparseFileIsBounded(t *testing.T) {
	dir := t.TempDir()
	sparse(t, filepath.Join(dir, "huge"), strings.Repeat("a", 9000), 400<<30)
	res, err := runGuarded(t, context.Background(), builtin(t, Options{WorkDir: dir, Confine: true}, "read_file"), `{"path":"huge"}`)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res, false, "lines 1-1 of at least 1", "64 MiB", "1\taaaa")
}

// cancelAfter is a context whose Err turns to Canceled at its n-th call:
// a cancel that arrives while a read is under way, at a point the test
// chooses and without a clock.
type cancelAfter struct {
	context.Context
	n, calls int
}

func (c *cancelAfter) Err() error {
	c.calls++
	if c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

// read_file checks its context every fixed number of bytes, not per line:
// a cancel stops a read of a file without newlines, whether it came before
// the call or during it.
func TestReadFileCancelWithoutNewlines(t *testing.T) {
	dir := t.TempDir()
	sparse(t, filepath.Join(dir, "big"), strings.Repeat("a", 9000), 1<<30)
	tool := builtin(t, Options{WorkDir: dir, Confine: true}, "read_file")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, ctx := range map[string]context.Context{
		"before the call": cancelled,
		"during the read": &cancelAfter{Context: context.Background(), n: 4},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := runGuarded(t, ctx, tool, `{"path":"big"}`)
			if !errors.Is(err, context.Canceled) || !res.IsError || !strings.Contains(res.Text, "canceled") {
				t.Errorf("Run = %v, %v; want IsError and context.Canceled\n%s", res.IsError, err, res.Text)
			}
		})
	}
}

// patch refuses a file above its size limit before reading it: a 768 MiB
// sparse file is refused with the limit and the observed size named, and
// the call allocates a small, bounded amount of memory (the old code read
// the whole file, then built two more copies of it).
func TestPatchRefusesHugeFileUpFront(t *testing.T) {
	dir := t.TempDir()
	const size = 768 << 20
	sparse(t, filepath.Join(dir, "big"), "x", size)
	tool := builtin(t, Options{WorkDir: dir, Confine: true}, "patch")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := runGuarded(t, context.Background(), tool, `{"path":"big","old_string":"x","new_string":"y"}`)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res, true, "big", fmt.Sprint(size), "8388608")
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("patch allocated %d bytes refusing a %d-byte file", grew, size)
	}
	if fi, err := os.Stat(filepath.Join(dir, "big")); err != nil || fi.Size() != size {
		t.Errorf("big changed: %v %v", fi, err)
	}
}

// startSignal is a context that closes started at the n-th call of Err:
// the read under test is n chunks in.
type startSignal struct {
	context.Context
	n       atomic.Int64
	started chan struct{}
}

func (s *startSignal) Err() error {
	if s.n.Add(-1) == 0 {
		close(s.started)
	}
	return s.Context.Err()
}

// BenchmarkReadFileCancel measures how long read_file takes to return
// once its context is cancelled in the middle of reading a 400 GiB sparse
// file without newlines (the read limit lifted, so only the cancel stops
// it): ns/op is the time from cancel to return.
func BenchmarkReadFileCancel(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "huge")
	if err := os.WriteFile(path, []byte(strings.Repeat("a", 9000)), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(path, 400<<30); err != nil {
		b.Skip(err)
	}
	tool := builtin(b, Options{WorkDir: dir, Confine: true}, "read_file").(*readFileTool)
	tool.c.maxScanBytes = 1 << 62
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		parent, cancel := context.WithCancel(context.Background())
		ctx := &startSignal{Context: parent, started: make(chan struct{})}
		ctx.n.Store(100) // 100 looks at ctx: about 6 MiB into the file
		done := make(chan error, 1)
		go func() {
			_, err := tool.Run(ctx, json.RawMessage(`{"path":"huge"}`))
			done <- err
		}()
		<-ctx.started
		b.StartTimer()
		t0 := time.Now()
		cancel()
		err := <-done
		total += time.Since(t0)
		if !errors.Is(err, context.Canceled) {
			b.Fatalf("Run = %v, want context.Canceled", err)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-to-return")
}
