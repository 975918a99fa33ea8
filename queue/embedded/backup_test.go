package embedded_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
)

// TestHotBackupThroughTheAdminSocket: while producers enqueue, another
// party copies the store through the holder's admin socket (mode 0600);
// the copy passes bbolt's check and opens as a store holding every job
// enqueued before the copy began, and the holder goes on working.
func TestHotBackupThroughTheAdminSocket(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	s := openT(t, path, queue.Options{})
	if err := s.ServeAdmin(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(embedded.SocketPath(path)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	var before []string
	for i := range 20 {
		j, _, err := s.Enqueue(ctx, queue.Job{ChatID: int64(i + 1), Goal: "before"})
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, j.ID)
	}
	var writing sync.WaitGroup
	var quit atomic.Bool
	for p := range 4 {
		writing.Go(func() {
			for i := 0; !quit.Load(); i++ {
				if _, _, err := s.Enqueue(context.Background(), queue.Job{ChatID: int64(1000 + p), Goal: fmt.Sprint("during ", i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	out := filepath.Join(dir, "copy.db")
	n, err := embedded.WriteBackup(out, func(w io.Writer) (int64, error) { return embedded.FetchBackup(ctx, path, w) })
	quit.Store(true)
	writing.Wait()
	if err != nil || n == 0 {
		t.Fatalf("FetchBackup = %d, %v", n, err)
	}
	if err := embedded.CheckFile(out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	c := openT(t, out, queue.Options{})
	for _, id := range before {
		if info, ok, err := c.Inspect(ctx, id); err != nil || !ok || info.State != queue.StateReady {
			t.Fatalf("job %s in the copy: %+v %v %v; want it ready", id, info, ok, err)
		}
	}
	if _, _, err := s.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "after"}); err != nil {
		t.Fatalf("the store after the backup: %v", err)
	}
}

// TestCheckFileRefusesAForeignFile: CheckFile names what is wrong with a
// file that is not a store.
func TestCheckFileRefusesAForeignFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(p, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := embedded.CheckFile(p); err == nil {
		t.Fatal("CheckFile accepted a file that is not a bbolt database")
	}
}
