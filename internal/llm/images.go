package llm

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/odekrun/odek/internal/jsonwire"
)

// Image is a picture sent with a user message, as an OpenAI-compatible
// "image_url" content part holding a data URL ("data:<type>;base64,…").
type Image struct {
	MediaType string // image/jpeg, image/png, image/gif or image/webp
	Data      []byte
}

// ImageHook attaches images to one user message of the completions made
// with a context (WithImages): the message whose content is Match is sent
// as content parts, its text first, then the images. Nothing of it is
// kept in Request or in the messages a caller persists, so a session
// keeps the text alone. With Auto, an endpoint that refuses the images
// (a 400 or 422 that names images, vision or multimodal input: a model
// without vision) is asked again without them, and the hook is off for
// the rest of the run.
type ImageHook struct {
	Match  string
	Images []Image
	Auto   bool
	off    atomic.Bool
}

type imageHookKey struct{}

// WithImages returns ctx carrying h for the completions made with it.
func WithImages(ctx context.Context, h *ImageHook) context.Context {
	return context.WithValue(ctx, imageHookKey{}, h)
}

// imagesFrom is ctx's hook, nil when there is none, it is empty or off.
func imagesFrom(ctx context.Context) *ImageHook {
	h, _ := ctx.Value(imageHookKey{}).(*ImageHook)
	if h == nil || len(h.Images) == 0 || h.off.Load() {
		return nil
	}
	return h
}

// Dropped reports whether Auto turned the images off (the endpoint
// refused them).
func (h *ImageHook) Dropped() bool { return h.off.Load() }

// at is the index of the message the images go with: the last user
// message whose content is Match (an earlier turn with the same words
// keeps its plain text); -1 when none or h is nil.
func (h *ImageHook) at(msgs []Message) int {
	if h == nil {
		return -1
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := &msgs[i]; m.Role == RoleUser && len(m.ToolCalls) == 0 && m.Content == h.Match {
			return i
		}
	}
	return -1
}

// appendMessage encodes m with content parts: its text, then one
// image_url part per image.
func (h *ImageHook) appendMessage(dst []byte, m *Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = jsonwire.AppendString(dst, m.Role)
	dst = append(dst, `,"content":[{"type":"text","text":`...)
	dst = jsonwire.AppendString(dst, m.Content)
	dst = append(dst, '}')
	for _, img := range h.Images {
		dst = append(dst, `,{"type":"image_url","image_url":{"url":"data:`...)
		dst = append(dst, img.MediaType...)
		dst = append(dst, ";base64,"...)
		dst = base64.StdEncoding.AppendEncode(dst, img.Data)
		dst = append(dst, `"}}`...)
	}
	dst = append(dst, ']')
	if m.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = jsonwire.AppendString(dst, m.Name)
	}
	return append(dst, '}')
}

// Complete sends req and returns the model's reply; completeOnce in
// client.go documents the attempts, streaming and errors. With an
// ImageHook on ctx the hook's message carries its images, and under Auto
// an endpoint that refuses them is asked once more without them.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	res, err := c.completeOnce(ctx, req)
	h := imagesFrom(ctx)
	if err == nil || h == nil || !h.Auto || !refusesImages(err) || ctx.Err() != nil {
		return res, err
	}
	h.off.Store(true)
	return c.completeOnce(ctx, req)
}

// refusesImages reports whether err is an endpoint refusing image input.
func refusesImages(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || (ae.StatusCode != 400 && ae.StatusCode != 422) {
		return false
	}
	m := strings.ToLower(ae.Message)
	return strings.Contains(m, "image") || strings.Contains(m, "vision") || strings.Contains(m, "multimodal") || strings.Contains(m, "multi-modal")
}

// ImagesOf is ctx's image hook (nil when none, empty or turned off).
func ImagesOf(ctx context.Context) *ImageHook { return imagesFrom(ctx) }
