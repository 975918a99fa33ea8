package chatdir

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestNameIsKeyedAndStable(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, KeyLen), bytes.Repeat([]byte{2}, KeyLen)
	a, b := Name(k1, 42), Name(k1, 43)
	if a == b || a != Name(k1, 42) || a == Name(k2, 42) || len(a) != NameLen {
		t.Fatalf("names: %q %q %q", a, b, Name(k2, 42))
	}
	if Name(k1, -1001) == Name(k1, 1001) {
		t.Fatal("negative ids collide")
	}
}

func TestKeyCreatedOnceAndShared(t *testing.T) {
	chats := t.TempDir()
	// Concurrent first uses (the bot and a worker at once) agree.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = createKey(chats) }()
	}
	wg.Wait()
	k, err := readKey(chats)
	if err != nil || len(k) != KeyLen {
		t.Fatal(k, err)
	}
	fi, err := os.Stat(filepath.Join(chats, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	names, _ := os.ReadDir(chats)
	if len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
	got, err := Key(chats)
	if err != nil || !bytes.Equal(got, k) {
		t.Fatal(got, err)
	}
}

func TestBadKeyRefused(t *testing.T) {
	chats := t.TempDir()
	if err := os.WriteFile(filepath.Join(chats, KeyFile), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Key(chats); err == nil || !strings.Contains(err.Error(), "32 bytes") {
		t.Fatalf("short key: %v", err)
	}
	other := t.TempDir()
	if err := os.Symlink(filepath.Join(chats, KeyFile), filepath.Join(other, KeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Key(other); err == nil {
		t.Fatal("a symbolic link was followed")
	}
}

func TestEnsureMigratesTheOldLayout(t *testing.T) {
	chats := t.TempDir()
	old := filepath.Join(chats, "7")
	if err := os.MkdirAll(filepath.Join(old, "uploads"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "uploads", "a.txt"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, err := Ensure(chats, 7)
	if err != nil {
		t.Fatal(err)
	}
	name, _ := Of(chats, 7)
	if dir != filepath.Join(chats, name) {
		t.Fatalf("dir %s, name %s", dir, name)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "uploads", "a.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("migrated file: %q %v", b, err)
	}
	if _, err := os.Lstat(old); !os.IsNotExist(err) {
		t.Fatalf("the old directory is still there: %v", err)
	}
	// A second use changes nothing; another chat gets its own directory.
	if again, err := Ensure(chats, 7); err != nil || again != dir {
		t.Fatal(again, err)
	}
	other, err := Ensure(chats, 8)
	if err != nil || other == dir {
		t.Fatal(other, err)
	}
	if fi, err := os.Stat(other); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("new directory: %v %v", fi, err)
	}
}
