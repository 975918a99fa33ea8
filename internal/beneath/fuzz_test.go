//go:build unix

package beneath_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/odekrun/odek/internal/beneath"
)

// FuzzReadFile: whatever name a job reports (an artifact path, a picture's
// path), ReadFile returns only a regular file of the directory itself,
// never one reached through a link or above it, and never blocks.
func FuzzReadFile(f *testing.F) {
	for _, s := range []string{"ok.txt", "sub/deep.txt", "link", "dirlink/outside.txt", "sublink/deep.txt", "../outside.txt",
		"/etc/passwd", "sub/../ok.txt", "./ok.txt", "sub//deep.txt", "fifo", "sub", "", ".", "..", "ok.txt/", "ok.txt\x00x", "dirlink/chat/ok.txt"} {
		f.Add(s)
	}
	base := f.TempDir()
	chat := filepath.Join(base, "chat")
	os.MkdirAll(filepath.Join(chat, "sub"), 0o700)
	os.WriteFile(filepath.Join(base, "outside.txt"), []byte("OUTSIDE"), 0o600)
	os.WriteFile(filepath.Join(chat, "ok.txt"), []byte("mine"), 0o600)
	os.WriteFile(filepath.Join(chat, "sub", "deep.txt"), []byte("deep"), 0o600)
	mkfifo(f, filepath.Join(chat, "fifo"))
	os.Symlink(filepath.Join(base, "outside.txt"), filepath.Join(chat, "link"))
	os.Symlink("..", filepath.Join(chat, "dirlink"))
	os.Symlink("sub", filepath.Join(chat, "sublink"))
	d, err := beneath.OpenDir(chat)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	f.Fuzz(func(t *testing.T, rel string) {
		b, fi, err := d.ReadFile(rel, 1<<10)
		if err != nil {
			return
		}
		if bytes.Contains(b, []byte("OUTSIDE")) || !fi.Mode().IsRegular() {
			t.Fatalf("ReadFile(%q) reached %q (%v)", rel, b, fi.Mode())
		}
		if rel != "ok.txt" && rel != "sub/deep.txt" {
			t.Fatalf("ReadFile(%q) succeeded: only plain names of the two files may", rel)
		}
	})
}

func mkfifo(tb testing.TB, p string) {
	tb.Helper()
	if err := mkfifoErr(p); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReadFile compares reading a small file of a chat's directory
// by descriptor (one openat2, fstat, read) with os.ReadFile by name.
func BenchmarkReadFile(b *testing.B) {
	chat := b.TempDir()
	os.MkdirAll(filepath.Join(chat, "a", "b"), 0o700)
	p := filepath.Join(chat, "a", "b", "f.txt")
	os.WriteFile(p, bytes.Repeat([]byte("x"), 4096), 0o600)
	b.Run("beneath", func(b *testing.B) {
		d, err := beneath.OpenDir(chat)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		for b.Loop() {
			if _, _, err := d.ReadFile("a/b/f.txt", 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
