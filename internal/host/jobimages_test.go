package host

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/internal/llm"
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
	var j JobRunner
	job := queue.Job{Vision: "auto", Images: []string{"uploads/cat.png", "uploads/notes.txt", "uploads/link.png", "../" + filepath.Base(filepath.Dir(outside)) + "/secret.png", "uploads/missing.png"}}
	ctx := j.withImages(context.Background(), job, dir, "the goal", log)
	h := llm.ImagesOf(ctx)
	if h == nil || len(h.Images) != 1 || h.Images[0].MediaType != "image/png" || !h.Auto || h.Match != "the goal" {
		t.Fatalf("hook %+v", h)
	}
	job.Vision = ""
	if llm.ImagesOf(j.withImages(context.Background(), job, dir, "g", log)) != nil {
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
	var j JobRunner
	job := queue.Job{Vision: "true", Images: []string{"uploads/photo.jpg", "./uploads/cat.png"}}
	h := llm.ImagesOf(j.withImages(context.Background(), job, dir, "g", log))
	if h == nil || len(h.Images) != 1 {
		t.Fatalf("hook %+v", h)
	}
}
