//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lean helper is used only when it is a regular executable beside the
// (resolved) binary that only root or this user owns and can write: it
// runs unconfined.
func TestLeanHelperIsChosenOnlyWhenSafe(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "odek")
	lean := filepath.Join(dir, LeanHelper)
	write := func(p string, mode os.FileMode) {
		t.Helper()
		os.Remove(p)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(exe, 0o755)
	if _, ok := leanHelper(exe); ok {
		t.Fatal("chose a lean helper that does not exist")
	}
	write(lean, 0o755)
	if p, ok := leanHelper(exe); !ok || p != lean {
		t.Fatalf("leanHelper = %q %v, want %s", p, ok, lean)
	}
	// Through a symlink to the binary (/usr/local/bin/odek -> …).
	link := filepath.Join(t.TempDir(), "odek")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if p, ok := leanHelper(link); !ok || p != lean {
		t.Fatalf("through a symlink: %q %v", p, ok)
	}
	for _, mode := range []os.FileMode{0o775, 0o757, 0o644} {
		write(lean, mode)
		if _, ok := leanHelper(exe); ok {
			t.Errorf("mode %v: chosen", mode)
		}
	}
	// A symlink in its place is not followed.
	os.Remove(lean)
	target := filepath.Join(t.TempDir(), "elsewhere")
	write(target, 0o755)
	if err := os.Symlink(target, lean); err != nil {
		t.Fatal(err)
	}
	if _, ok := leanHelper(exe); ok {
		t.Error("a symlink named odek-sandbox was chosen")
	}
	// Another user's file (needs root to make one).
	if os.Geteuid() == 0 {
		os.Remove(lean)
		write(lean, 0o755)
		if err := os.Chown(lean, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if _, ok := leanHelper(exe); ok {
			t.Error("another user's odek-sandbox was chosen")
		}
	}
}

// A helper that does not know a field of the spec refuses it, so a
// lean helper older than odek never drops a limit silently.
func TestHelperRefusesUnknownSpecFields(t *testing.T) {
	var stderr strings.Builder
	code := runHelper([]string{`{"root":"/x","temp_dir":"/y","job_limit_from_the_future":1}`, "true"}, &stderr)
	if code != ExitUsage || !strings.Contains(stderr.String(), "job_limit_from_the_future") {
		t.Fatalf("exit %d, stderr %q; want %d naming the field", code, stderr.String(), ExitUsage)
	}
}
