package llm_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

var png1 = []byte("\x89PNG\r\n\x1a\n-not-really-a-png")

// The hook's message goes out as OpenAI content parts (text, then
// image_url data URLs); other messages and other runs stay plain text.
func TestImagesGoWithTheirMessage(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("a cat"), llmtest.Reply("again"))
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	h := &llm.ImageHook{Match: "what is in the picture?", Images: []llm.Image{{MediaType: "image/png", Data: png1}}}
	req := llm.Request{Model: "test-model", Messages: []llm.Message{{Role: llm.RoleSystem, Content: "be brief"},
		{Role: llm.RoleUser, Content: "what is in the picture?"}, {Role: llm.RoleAssistant, Content: "a dog"}, // an earlier turn, same words
		{Role: llm.RoleUser, Content: "what is in the picture?"}}}
	if _, err := c.Complete(llm.WithImages(context.Background(), h), req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), req); err != nil { // no hook: plain again (the cache holds no image form)
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
		t.Errorf("a run without the hook sent images: %s", reqs[1].Body)
	}
}

// Auto: an endpoint that refuses images (a model without vision) is asked
// again without them; without Auto the refusal is the error.
func TestImagesAutoFallsBackWithoutVision(t *testing.T) {
	refuse := llmtest.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "Invalid content type. image_url is only supported by certain models."}
	srv := llmtest.New(t, refuse, llmtest.Reply("no picture, but hello"), refuse)
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	req := llm.Request{Model: "test-model", Messages: []llm.Message{{Role: llm.RoleUser, Content: "look"}}}
	auto := &llm.ImageHook{Match: "look", Images: []llm.Image{{MediaType: "image/jpeg", Data: []byte("jpeg")}}, Auto: true}
	res, err := c.Complete(llm.WithImages(context.Background(), auto), req)
	if err != nil || res.Message.Content != "no picture, but hello" || !auto.Dropped() {
		t.Fatalf("auto: %v %v dropped=%v", res, err, auto.Dropped())
	}
	if r := srv.Requests(); len(r) != 2 || !bytes.Contains(r[0].Body, []byte("image_url")) || bytes.Contains(r[1].Body, []byte("image_url")) {
		t.Errorf("requests: want one with images, then one without")
	}
	strict := &llm.ImageHook{Match: "look", Images: []llm.Image{{MediaType: "image/jpeg", Data: []byte("jpeg")}}}
	if _, err := c.Complete(llm.WithImages(context.Background(), strict), req); err == nil {
		t.Error("vision true: the refusal did not surface")
	}
}
