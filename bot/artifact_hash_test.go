package bot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/internal/chatdir"
	"github.com/odekrun/odek/queue"
)

func metaOf(t *testing.T, dir, rel string) queue.ArtifactMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return queue.ArtifactMeta{Path: rel, Name: filepath.Base(rel), MIME: "text/plain", Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
}

// /artifact re-checks the digest the worker measured: a file changed
// after the job ended is refused.
func TestReadArtifactChecksTheWorkersDigest(t *testing.T) {
	dir := t.TempDir()
	c7 := chatName(t, dir, 7)
	if err := os.MkdirAll(filepath.Join(dir, c7), 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, c7, "out.txt")
	if err := os.WriteFile(p, []byte("result"), 0o600); err != nil {
		t.Fatal(err)
	}
	meta := metaOf(t, dir, c7+"/out.txt")
	if b, err := readArtifact(dir, 7, meta, MaxUploadBytes); err != nil || string(b) != "result" {
		t.Fatalf("untouched artifact: %q, %v", b, err)
	}
	if err := os.WriteFile(p, []byte("RESULT"), 0o600); err != nil { // same size, other bytes
		t.Fatal(err)
	}
	_, err := readArtifact(dir, 7, meta, MaxUploadBytes)
	if !errors.Is(err, artifacts.ErrHashMismatch) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("changed artifact: err = %v, want a sha256 mismatch", err)
	}
}

// A chat's directory holds a FIFO, a device, links out and a path of
// another chat: each is refused at once, never blocking, never followed.
func TestReadArtifactRefusesWhatIsNotTheChatsRegularFile(t *testing.T) {
	dir := t.TempDir()
	c7, c8 := chatName(t, dir, 7), chatName(t, dir, 8)
	for _, d := range []string{c7 + "/sub", c8} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
	}
	os.WriteFile(filepath.Join(dir, c8, "secret.txt"), []byte("chat 8"), 0o600)
	os.WriteFile(filepath.Join(dir, c7, "sub", "ok.txt"), []byte("chat 7"), 0o600)
	if err := syscall.Mkfifo(filepath.Join(dir, c7, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(dir, c8, "secret.txt"), filepath.Join(dir, c7, "link.txt"))
	os.Symlink(filepath.Join(dir, c8), filepath.Join(dir, c7, "linkdir"))
	os.Symlink("/dev/zero", filepath.Join(dir, c7, "zero"))
	for _, c := range []struct{ path, want string }{
		{c7 + "/pipe", "named pipe"},
		{c7 + "/link.txt", "symbolic link"},
		{c7 + "/linkdir/secret.txt", "symbolic link"},
		{c7 + "/zero", "symbolic link"},
		{c7 + "/../" + c8 + "/secret.txt", "leaves the directory"},
		{c8 + "/secret.txt", "not in chat 7's directory"},
		{c7 + "/sub", "directory"},
	} {
		meta := queue.ArtifactMeta{Path: c.path, Bytes: 6}
		b, err := readArtifact(dir, 7, meta, MaxUploadBytes)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q, %v; want an error naming %q", c.path, b, err, c.want)
		}
	}
	if b, err := readArtifact(dir, 7, metaOf(t, dir, c7+"/sub/ok.txt"), MaxUploadBytes); err != nil || string(b) != "chat 7" {
		t.Errorf("the chat's own file: %q, %v", b, err)
	}
}

// The route of issue 21 (6): a job's process swaps the validated file for
// a link to another chat's file, in a loop (renameat2 RENAME_EXCHANGE),
// while the bot sends it. Another chat's bytes are never returned: what
// is checked is what is read, through one descriptor.
func TestReadArtifactUnderSwaps(t *testing.T) {
	dir := t.TempDir()
	c7, c8 := chatName(t, dir, 7), chatName(t, dir, 8)
	os.MkdirAll(filepath.Join(dir, c7), 0o700)
	os.MkdirAll(filepath.Join(dir, c8), 0o700)
	os.WriteFile(filepath.Join(dir, c8, "secret.txt"), []byte("chat 8's secret"), 0o600)
	os.WriteFile(filepath.Join(dir, c7, "out.txt"), []byte("chat 7's result"), 0o600) // same size
	meta := metaOf(t, dir, c7+"/out.txt")
	meta.SHA256 = "" // the hash would catch it; size alone must not let it through either
	os.Symlink(filepath.Join(dir, c8, "secret.txt"), filepath.Join(dir, c7, "swap"))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, c7, "out.txt"), unix.AT_FDCWD, filepath.Join(dir, c7, "swap"), unix.RENAME_EXCHANGE)
		}
	}()
	sent := 0
	for range 5000 {
		b, err := readArtifact(dir, 7, meta, MaxUploadBytes)
		if strings.Contains(string(b), "chat 8") {
			stop.Store(true)
			wg.Wait()
			t.Fatal("another chat's file was read for sending")
		}
		if err == nil {
			sent++
		}
	}
	stop.Store(true)
	wg.Wait()
	if sent == 0 {
		t.Error("no read succeeded: the test proves nothing")
	}
}

// chatName is chat id's directory name under dir (package chatdir).
func chatName(t *testing.T, dir string, id int64) string {
	t.Helper()
	name, err := chatdir.Of(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return name
}
