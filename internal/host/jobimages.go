package host

import (
	"context"
	"io"
	"net/http"
	"os"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/queue"
)

// MaxJobImages and MaxImageBytes bound the pictures one job sends to the
// model (OpenAI takes up to 20 MB per image).
const (
	MaxJobImages  = 10
	MaxImageBytes = 20 << 20
)

// imageTypes are the image types sent to vision models.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// withImages returns ctx carrying the job's pictures for the goal's
// message (llm.WithImages) when the job asks for vision. Each path is
// opened through an os.Root on the chat's directory dir, so a job names
// only its own chat's files; a file that is missing, too large or not a
// JPEG, PNG, GIF or WebP (by its bytes) is skipped and logged.
func (j *JobRunner) withImages(ctx context.Context, job queue.Job, dir, goal string, log logrus.FieldLogger) context.Context {
	if (job.Vision != "true" && job.Vision != "auto") || len(job.Images) == 0 || dir == "" {
		return ctx
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		log.WithError(err).Warn("host: the job's pictures cannot be read; running without them")
		return ctx
	}
	defer root.Close()
	var imgs []llm.Image
	for _, p := range job.Images {
		if len(imgs) == MaxJobImages {
			log.WithField("images", len(job.Images)).Warn("host: more pictures than a job sends; the rest are left out")
			break
		}
		data, mt, err := readImage(root, p)
		if err != nil {
			log.WithError(err).WithField("image", p).Warn("host: a picture of the job is left out")
			continue
		}
		imgs = append(imgs, llm.Image{MediaType: mt, Data: data})
	}
	if len(imgs) == 0 {
		return ctx
	}
	return llm.WithImages(ctx, &llm.ImageHook{Match: goal, Images: imgs, Auto: job.Vision == "auto"})
}

type imageError string

func (e imageError) Error() string { return string(e) }

func readImage(root *os.Root, p string) ([]byte, string, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", imageError("not a regular file")
	}
	if fi.Size() > MaxImageBytes {
		return nil, "", imageError("larger than 20 MiB")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return nil, "", err
	}
	mt := http.DetectContentType(data)
	if !imageTypes[mt] {
		return nil, "", imageError("not a JPEG, PNG, GIF or WebP image (" + mt + ")")
	}
	return data, mt, nil
}
