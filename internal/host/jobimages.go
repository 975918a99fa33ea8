package host

import (
	"errors"
	"net/http"
	"path"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/beneath"
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

// jobImages are the job's pictures for the goal's message when the job
// asks for vision (nil otherwise). Each path is resolved beneath the
// chat's directory dir, opened once, with no symbolic link followed
// (package beneath), so a job names only its own chat's files; a FIFO or
// device is refused without blocking, and the size and type checked are
// those of the bytes read from that one descriptor. A file that is
// missing, not regular, too large or not a JPEG, PNG, GIF or WebP (by its
// bytes) is skipped and logged.
func jobImages(job queue.Job, dir string, log logrus.FieldLogger) []agent.Image {
	if (job.Vision != "true" && job.Vision != "auto") || len(job.Images) == 0 || dir == "" {
		return nil
	}
	root, err := beneath.OpenDir(dir)
	if err != nil {
		log.WithError(err).Warn("host: the job's pictures cannot be read; running without them")
		return nil
	}
	defer root.Close()
	var imgs []agent.Image
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
		imgs = append(imgs, agent.Image{MediaType: mt, Data: data})
	}
	return imgs
}

type imageError string

func (e imageError) Error() string { return string(e) }

func readImage(root *beneath.Dir, p string) ([]byte, string, error) {
	data, _, err := root.ReadFile(path.Clean(filepath.ToSlash(p)), MaxImageBytes)
	if errors.Is(err, beneath.ErrTooLarge) {
		return nil, "", imageError("larger than 20 MiB")
	}
	if err != nil {
		return nil, "", err
	}
	mt := http.DetectContentType(data)
	if !imageTypes[mt] {
		return nil, "", imageError("not a JPEG, PNG, GIF or WebP image (" + mt + ")")
	}
	return data, mt, nil
}
