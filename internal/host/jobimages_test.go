package host

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/queue"
)

// A job's pictures are read from its chat's directory only, as images by
// their bytes, and only when the job asks for vision.
func TestJobImagesFromTheChatDirectory(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.png")
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	os.WriteFile(outside, png, 0o600)
	os.MkdirAll(filepath.Join(dir, "uploads"), 0o700)
	os.WriteFile(filepath.Join(dir, "uploads", "cat.png"), png, 0o600)
	os.WriteFile(filepath.Join(dir, "uploads", "notes.txt"), []byte("plain text"), 0o600)
	os.Symlink(outside, filepath.Join(dir, "uploads", "link.png"))
	job := queue.Job{Vision: "auto", Images: []string{"uploads/cat.png", "uploads/notes.txt", "uploads/link.png", "../" + filepath.Base(filepath.Dir(outside)) + "/secret.png", "uploads/missing.png"}}
	imgs := jobImages(job, dir, log)
	if len(imgs) != 1 || imgs[0].MediaType != "image/png" {
		t.Fatalf("images %+v", imgs)
	}
	job.Vision = ""
	if jobImages(job, dir, log) != nil {
		t.Error("images sent without vision")
	}
}

// A FIFO (a job can make one with mkfifo or tar) named as a picture is
// refused at once; reading it would block the worker's job for ever.
func TestJobImagesRefuseAFIFO(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "uploads"), 0o700)
	if err := syscall.Mkfifo(filepath.Join(dir, "uploads", "photo.jpg"), 0o600); err != nil {
		t.Fatal(err)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	os.WriteFile(filepath.Join(dir, "uploads", "cat.png"), png, 0o600)
	job := queue.Job{Vision: "true", Images: []string{"uploads/photo.jpg", "./uploads/cat.png"}}
	if imgs := jobImages(job, dir, log); len(imgs) != 1 {
		t.Fatalf("images %+v", imgs)
	}
}
