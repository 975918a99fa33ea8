//go:build unix

package skills

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO planted in a skill's directory is refused at once: opening it
// must not wait for a writer (issue 21: a planted FIFO froze a slot).
func TestReadFileRefusesAFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "ok/SKILL.md"), skillMD("ok", "fine"))
	if err := syscall.Mkfifo(filepath.Join(dir, "ok/pipe.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, _ := Load(Options{OperatorDirs: []string{dir}})
	done := make(chan error, 1)
	go func() {
		_, err := set.ReadFile("ok", "pipe.txt")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("reading a FIFO: %v, want it refused as not a regular file", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ReadFile blocked on a FIFO")
	}
}
