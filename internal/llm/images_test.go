package llm_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

var png1 = []byte("\x89PNG\r\n\x1a\n-not-really-a-png")

// A message's images go out as OpenAI content parts (text, then image_url
// data URLs); other messages, and the same text without images, stay
// plain text.
func TestImagesGoWithTheirMessage(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("a cat"), llmtest.Reply("again"))
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	imgs := []llm.Image{{MediaType: "image/png", Data: png1}}
	req := llm.Request{Model: "test-model", Messages: []llm.Message{{Role: llm.RoleSystem, Content: "be brief"},
		{Role: llm.RoleUser, Content: "what is in the picture?"}, {Role: llm.RoleAssistant, Content: "a dog"}, // an earlier turn, same words
		{Role: llm.RoleUser, Content: "what is in the picture?", Images: imgs}}}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Messages[3].Images = nil
	if _, err := c.Complete(context.Background(), req); err != nil { // no images: plain again (the cache holds no image form)
		t.Fatal(err)
	}
	reqs := srv.Requests()
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if string(body.Messages[1].Content) != `"what is in the picture?"` {
		t.Errorf("the earlier turn got the images: %s", body.Messages[1].Content)
	}
	if err := json.Unmarshal(body.Messages[3].Content, &parts); err != nil {
		t.Fatalf("user content %s: %v", body.Messages[3].Content, err)
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png1)
	if len(parts) != 2 || parts[0].Type != "text" || parts[0].Text != "what is in the picture?" || parts[1].Type != "image_url" || parts[1].ImageURL.URL != want {
		t.Errorf("parts %+v", parts)
	}
	if string(body.Messages[0].Content) != `"be brief"` {
		t.Errorf("system content %s", body.Messages[0].Content)
	}
	if bytes.Contains(reqs[1].Body, []byte("image_url")) {
		t.Errorf("a request without images sent images: %s", reqs[1].Body)
	}
}

// An endpoint that refuses images (a model without vision) fails the call
// with an error matching agent.ErrImagesRefused; the same refusal of a
// request without images does not.
func TestImagesRefusedIsTyped(t *testing.T) {
	refuse := llmtest.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "Invalid content type. image_url is only supported by certain models."}
	srv := llmtest.New(t, refuse, refuse)
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	req := llm.Request{Model: "test-model", Messages: []llm.Message{{Role: llm.RoleUser, Content: "look", Images: []llm.Image{{MediaType: "image/jpeg", Data: []byte("jpeg")}}}}}
	_, err := c.Complete(context.Background(), req)
	var ae *llm.APIError
	if !errors.Is(err, agent.ErrImagesRefused) || !errors.As(err, &ae) || ae.StatusCode != 400 {
		t.Fatalf("err = %v, want ErrImagesRefused wrapping the APIError", err)
	}
	req.Messages[0].Images = nil
	if _, err := c.Complete(context.Background(), req); err == nil || errors.Is(err, agent.ErrImagesRefused) {
		t.Errorf("no images: err = %v", err)
	}
}
