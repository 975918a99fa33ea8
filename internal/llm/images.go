package llm

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/jsonwire"
)

// Image is a picture sent with a user message (agent.Message.Images), as
// an OpenAI-compatible "image_url" content part holding a data URL
// ("data:<type>;base64,…").
type Image = agent.Image

// appendImageMessage encodes m with content parts: its text, then one
// image_url part per image. Such a message is never memoized: the images
// are for this request alone.
func appendImageMessage(dst []byte, m *Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = jsonwire.AppendString(dst, m.Role)
	dst = append(dst, `,"content":[{"type":"text","text":`...)
	dst = jsonwire.AppendString(dst, m.Content)
	dst = append(dst, '}')
	for _, img := range m.Images {
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
// client.go documents the attempts, streaming and errors. An endpoint that
// refuses the images of req's messages fails the call with an error that
// also matches agent.ErrImagesRefused (the loop may drop them and ask
// again).
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	return c.CompleteStream(ctx, req, nil)
}

// CompleteStream is Complete, passing the answer's content to delta as it
// streams (agent.StreamingModel): synchronously, from the calling
// goroutine, never reasoning or tool-call arguments; a retried attempt
// begins with a Delta whose Restart is set. nil delta ⇒ Complete.
func (c *Client) CompleteStream(ctx context.Context, req Request, delta func(agent.Delta)) (*Response, error) {
	res, err := c.completeOnce(ctx, req, delta)
	if err != nil && refusesImages(err) && hasImages(req.Messages) {
		return nil, fmt.Errorf("%w: %w", agent.ErrImagesRefused, err)
	}
	return res, err
}

var _ agent.StreamingModel = (*Client)(nil)

func hasImages(msgs []Message) bool {
	for i := range msgs {
		if len(msgs[i].Images) > 0 {
			return true
		}
	}
	return false
}

// refusesImages reports whether err is an endpoint refusing image input:
// a 400 or 422 whose message names images, vision or multimodal input.
func refusesImages(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || (ae.StatusCode != 400 && ae.StatusCode != 422) {
		return false
	}
	m := strings.ToLower(ae.Message)
	return strings.Contains(m, "image") || strings.Contains(m, "vision") || strings.Contains(m, "multimodal") || strings.Contains(m, "multi-modal")
}
