package privdir

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMakeNamesCarry128RandomBits(t *testing.T) {
	parent := t.TempDir()
	seen := map[string]bool{}
	for range 20 {
		dir, err := Make(parent, "odek-job-")
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(dir) != parent {
			t.Fatalf("%s is not in %s", dir, parent)
		}
		suffix, ok := strings.CutPrefix(filepath.Base(dir), "odek-job-")
		if !ok {
			t.Fatalf("%s lacks the prefix", dir)
		}
		b, err := hex.DecodeString(suffix)
		if err != nil || len(b)*8 < 128 {
			t.Fatalf("name %q carries %d random bits, want >= 128 (%v)", suffix, len(b)*8, err)
		}
		if seen[suffix] {
			t.Fatalf("name %s repeated", suffix)
		}
		seen[suffix] = true
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, mode %v, want a 0700 directory", dir, err, fi.Mode())
		}
	}
}

// A name that exists already — a directory or a symlink another process
// planted — is never returned: mkdir(2) refuses it and the next name is
// tried.
func TestMakeNeverReusesAnExistingName(t *testing.T) {
	parent := t.TempDir()
	target := t.TempDir()
	first := bytes.Repeat([]byte{0xaa}, RandomBytes)
	second := bytes.Repeat([]byte{0xbb}, RandomBytes)
	planted := filepath.Join(parent, "p-"+hex.EncodeToString(first))
	if err := os.Symlink(target, planted); err != nil {
		t.Fatal(err)
	}
	dir, err := makeWith(parent, "p-", bytes.NewReader(append(first, second...)))
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(parent, "p-"+hex.EncodeToString(second)) {
		t.Fatalf("got %s, want the second name", dir)
	}
	if fi, err := os.Lstat(planted); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the planted symlink was touched: %v %v", fi, err)
	}
	// Every name taken: an error, not a directory that existed.
	taken := filepath.Join(parent, "q-"+hex.EncodeToString(first))
	if err := os.Mkdir(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, err := makeWith(parent, "q-", bytes.NewReader(bytes.Repeat(first, 10))); err == nil {
		t.Fatalf("got %s for names that all exist", dir)
	}
	// No randomness: an error naming it.
	if _, err := makeWith(parent, "r-", bytes.NewReader(nil)); err == nil || !strings.Contains(err.Error(), "random") {
		t.Fatalf("err = %v, want a random-name error", err)
	}
}
