//go:build unix

package events

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenFileRefusesFIFO also checks that the open does not block on a
// FIFO without a reader.
func TestOpenFileRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s, err := OpenFile(path, FileOptions{})
	if err == nil {
		s.Close()
		t.Fatal("OpenFile opened a FIFO")
	}
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("error %v, want ErrNotRegular", err)
	}
	// The open itself, as if the FIFO appeared after the Lstat check.
	f, err := openNoFollow(path)
	if err == nil {
		f.Close()
		t.Fatal("openNoFollow opened a FIFO without a reader")
	}
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("openNoFollow error %v, want ErrNotRegular", err)
	}
}
