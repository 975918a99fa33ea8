package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two, longer"), 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "two, longer" {
		t.Fatalf("content %q, %v; want the second write", got, err)
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("mode %v, want 0640 (the perm passed, not the umask)", fi.Mode().Perm())
		}
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "state.json" {
		t.Errorf("directory holds %v, want only state.json (no temporary file left)", names)
	}
}

func TestWriteFileUmaskIndependent(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permission bits on Windows")
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(p, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o666 {
		t.Errorf("mode %v, want 0666 whatever the umask", fi.Mode().Perm())
	}
}

// A failed write leaves the old file as it was and no temporary file.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Renaming a file over a non-empty directory fails.
	sub := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(sub, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(sub, []byte("new"), 0o600)
	if err == nil || !strings.Contains(err.Error(), sub) {
		t.Fatalf("WriteFile over a directory: %v, want an error naming %s", err, sub)
	}
	if names := entries(t, dir); len(names) != 2 {
		t.Errorf("directory holds %v, want f and d only", names)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Errorf("old file now %q", got)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFile in a missing directory: %v, want ErrNotExist", err)
	}
}

// A symlink at the name is replaced, not written through.
func TestWriteReplacesSymlink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("target"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "target" {
		t.Errorf("target written through the link: %q", got)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink != 0 {
		t.Errorf("link still a symlink")
	}
}

// Write through *os.Root stays inside the root.
func TestWriteRoot(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(root, "sub/f.txt", []byte("in root"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "sub", "f.txt")); !bytes.Equal(got, []byte("in root")) {
		t.Errorf("content %q", got)
	}
	if err := Write(root, "../escape", []byte("x"), 0o644); err == nil {
		t.Error("Write(root, ../escape) succeeded")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); err == nil {
		t.Error("a file was written outside the root")
	}
}
