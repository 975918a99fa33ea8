//go:build unix

package beneath_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/odekrun/odek/internal/beneath"
)

// tree builds base/{outside.txt, chat/{ok.txt, sub/deep.txt, fifo,
// link→outside.txt, dirlink→.., sublink→sub}} and returns base and chat.
func tree(t *testing.T) (string, string) {
	t.Helper()
	base := t.TempDir()
	chat := filepath.Join(base, "chat")
	must(t, os.MkdirAll(filepath.Join(chat, "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(base, "outside.txt"), []byte("OTHER"), 0o600))
	must(t, os.WriteFile(filepath.Join(chat, "ok.txt"), []byte("mine"), 0o600))
	must(t, os.WriteFile(filepath.Join(chat, "sub", "deep.txt"), []byte("deep"), 0o600))
	must(t, syscall.Mkfifo(filepath.Join(chat, "fifo"), 0o600))
	must(t, os.Symlink(filepath.Join(base, "outside.txt"), filepath.Join(chat, "link")))
	must(t, os.Symlink("..", filepath.Join(chat, "dirlink")))
	must(t, os.Symlink("sub", filepath.Join(chat, "sublink")))
	return base, chat
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadFile(t *testing.T) {
	_, chat := tree(t)
	d, err := beneath.OpenDir(chat)
	must(t, err)
	defer d.Close()
	for _, c := range []struct {
		rel  string
		want string
		err  error
	}{
		{"ok.txt", "mine", nil},
		{"sub/deep.txt", "deep", nil},
		{"fifo", "", beneath.ErrNotRegular},
		{"sub", "", beneath.ErrNotRegular},
		{"link", "", beneath.ErrEscapes},
		{"dirlink/outside.txt", "", beneath.ErrEscapes},
		{"sublink/deep.txt", "", beneath.ErrEscapes},
		{"../outside.txt", "", beneath.ErrEscapes},
		{"/etc/passwd", "", beneath.ErrEscapes},
		{"sub/../ok.txt", "", beneath.ErrEscapes},
		{"", "", beneath.ErrEscapes},
		{"missing", "", fs.ErrNotExist},
	} {
		b, _, err := d.ReadFile(c.rel, 1<<20)
		if c.err == nil && (err != nil || string(b) != c.want) || c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("ReadFile(%q) = %q, %v; want %q, %v", c.rel, b, err, c.want, c.err)
		}
	}
	if _, _, err := d.ReadFile("ok.txt", 3); !errors.Is(err, beneath.ErrTooLarge) {
		t.Errorf("limit: %v", err)
	}
}

func TestOpenDirRefusesALink(t *testing.T) {
	base, chat := tree(t)
	if _, err := beneath.OpenDir(filepath.Join(chat, "sublink")); err == nil {
		t.Error("OpenDir followed a symbolic link")
	}
	d, err := beneath.OpenDir(base)
	must(t, err)
	defer d.Close()
	if _, err := d.OpenDir("chat/dirlink"); err == nil {
		t.Errorf("OpenDir(chat/dirlink) = %v", err)
	}
}

func TestCreateMkdirRemove(t *testing.T) {
	base, chat := tree(t)
	d, err := beneath.OpenDir(chat)
	must(t, err)
	defer d.Close()
	if _, err := d.Create("link", 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a link: %v", err)
	}
	if _, err := d.MkdirAllOpen("sublink/x", 0o700); err == nil {
		t.Errorf("MkdirAllOpen through a link: %v", err)
	}
	if _, err := d.MkdirAllOpen("dirlink/evil", 0o700); err == nil {
		t.Error("MkdirAllOpen through a link to the parent succeeded")
	}
	if _, err := os.Stat(filepath.Join(base, "evil")); err == nil {
		t.Error("a directory was made outside")
	}
	n, err := d.MkdirAllOpen("a/b/c", 0o700)
	must(t, err)
	f, err := n.Create("new.txt", 0o600)
	must(t, err)
	f.WriteString("x")
	f.Close()
	n.Close()
	if b, _ := os.ReadFile(filepath.Join(chat, "a/b/c/new.txt")); string(b) != "x" {
		t.Errorf("created file: %q", b)
	}
	// RemoveAll through a link removes the link, not what it points at.
	must(t, os.Symlink(base, filepath.Join(chat, "a", "up")))
	must(t, d.RemoveAll("a"))
	must(t, d.RemoveAll("dirlink"))
	if _, err := os.Stat(filepath.Join(base, "outside.txt")); err != nil {
		t.Errorf("RemoveAll followed a link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(chat, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a still there: %v", err)
	}
}

func TestWalkSkipsLinksAndSpecialFiles(t *testing.T) {
	_, chat := tree(t)
	d, err := beneath.OpenDir(chat)
	must(t, err)
	defer d.Close()
	var got []string
	must(t, d.Walk(0, func(e beneath.Entry) error {
		got = append(got, e.Rel)
		return nil
	}))
	sort.Strings(got)
	if len(got) != 2 || got[0] != "ok.txt" || got[1] != "sub/deep.txt" {
		t.Errorf("Walk = %q", got)
	}
	if err := d.Walk(3, func(beneath.Entry) error { return nil }); err == nil {
		t.Error("Walk past its entry limit did not fail")
	}
}

// A file swapped for a link to another directory's file, in a loop,
// while it is read: the other file's bytes are never returned.
func TestReadFileUnderSwaps(t *testing.T) {
	base, chat := tree(t)
	must(t, os.Symlink(filepath.Join(base, "outside.txt"), filepath.Join(chat, "swap")))
	d, err := beneath.OpenDir(chat)
	must(t, err)
	defer d.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(chat, "ok.txt"), unix.AT_FDCWD, filepath.Join(chat, "swap"), unix.RENAME_EXCHANGE)
		}
	}()
	ok := 0
	for range 5000 {
		b, _, err := d.ReadFile("ok.txt", 1<<20)
		if string(b) == "OTHER" {
			t.Fatal("read the other directory's file through a swapped link")
		}
		if err == nil {
			ok++
		}
	}
	stop.Store(true)
	wg.Wait()
	if ok == 0 {
		t.Error("no read succeeded: the test proves nothing")
	}
}
