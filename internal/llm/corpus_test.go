package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm"
)

// providerCase is the sidecar of one recorded provider response in
// testdata/providers/<provider>/<name>.case.json: where the sample comes
// from and what it means.
type providerCase struct {
	Provider       string   `json:"provider"`
	ProviderConfig string   `json:"provider_config"` // llm.Config.Provider for the replay
	Model          string   `json:"model"`
	Source         []string `json:"source"`
	Recorded       string   `json:"recorded"`
	Interpretation string   `json:"interpretation"`
	Body           string   `json:"body"`
	ContentType    string   `json:"content_type"`
	Stream         bool     `json:"stream"`
	Status         int      `json:"status"`
	Want           struct {
		Content   *string         `json:"content"`
		Reasoning string          `json:"reasoning"`
		Finish    *string         `json:"finish"`
		Model     string          `json:"model"`
		ToolCalls []wantCall      `json:"tool_calls"`
		Usage     *llm.Usage      `json:"usage"`
		Extra     json.RawMessage `json:"extra"`
		Error     string          `json:"error"`
		ErrorIs   string          `json:"error_is"`
	} `json:"want"`
	NextAssistant json.RawMessage `json:"next_assistant"`
}

type wantCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Extra     json.RawMessage `json:"extra"`
}

var sentinels = map[string]error{
	"ErrContextLength":     llm.ErrContextLength,
	"ErrOutputTruncated":   llm.ErrOutputTruncated,
	"ErrStreamInterrupted": llm.ErrStreamInterrupted,
	"ErrUnauthorized":      llm.ErrUnauthorized,
}

// canonJSON renders JSON with sorted keys (nil for empty input).
func canonJSON(t *testing.T, b []byte) string {
	t.Helper()
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func loadCases(t *testing.T) map[string]providerCase {
	t.Helper()
	files, err := filepath.Glob("testdata/providers/*/*.case.json")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]providerCase{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c providerCase
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(f, "testdata/providers/"), ".case.json")] = c
	}
	return out
}

// TestProviderCorpusSize keeps the corpus at the size issue 11 asks for,
// every sample with its source written beside it.
func TestProviderCorpusSize(t *testing.T) {
	cases := loadCases(t)
	providers := map[string]bool{}
	for name, c := range cases {
		if len(c.Source) == 0 || c.Recorded == "" || c.Interpretation == "" {
			t.Errorf("%s: the sidecar must name its source, how it was recorded and what it means", name)
		}
		if c.Provider != "edge" {
			providers[c.Provider] = true
		}
	}
	// Every recorded body has its own sidecar.
	bodies, _ := filepath.Glob("testdata/providers/*/*")
	described := map[string]bool{}
	for name, c := range cases {
		described[filepath.Join("testdata/providers", filepath.Dir(name), c.Body)] = true
	}
	for _, b := range bodies {
		if !strings.HasSuffix(b, ".case.json") && !described[b] {
			t.Errorf("%s has no sidecar (or shares one with another body)", b)
		}
	}
	if len(cases) < 30 || len(providers) < 10 {
		t.Errorf("corpus has %d samples from %d providers, want >= 30 from >= 10", len(cases), len(providers))
	}
}

// TestProviderCorpus replays every recorded response through the real
// client over loopback HTTP, checks what the client makes of it, and for
// the round-trip cases the exact assistant message of the next request.
func TestProviderCorpus(t *testing.T) {
	for name, c := range loadCases(t) {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata/providers", filepath.Dir(name), c.Body))
			if err != nil {
				t.Fatal(err)
			}
			var second []byte // the raw next request
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls++
				if calls == 1 {
					if c.ContentType != "" {
						w.Header().Set("Content-Type", c.ContentType)
					}
					status := c.Status
					if status == 0 {
						status = http.StatusOK
					}
					w.WriteHeader(status)
					w.Write(body)
					return
				}
				second, _ = io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
			}))
			defer srv.Close()
			client, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", DisableStreaming: !c.Stream, MaxAttempts: 1, Provider: c.ProviderConfig})
			if err != nil {
				t.Fatal(err)
			}
			model := c.Model
			if model == "" {
				model = "m"
			}
			msgs := []llm.Message{{Role: llm.RoleUser, Content: "go"}}
			res, err := client.Complete(context.Background(), llm.Request{Model: model, Messages: msgs})
			w := c.Want
			if w.Error != "" || w.ErrorIs != "" {
				if err == nil {
					t.Fatalf("no error; response %+v", res)
				}
				if w.ErrorIs != "" && !errors.Is(err, sentinels[w.ErrorIs]) {
					t.Errorf("err = %v, want %s", err, w.ErrorIs)
				}
				if !strings.Contains(err.Error(), w.Error) {
					t.Errorf("err = %q, want it to contain %q", err, w.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := res.Message
			if w.Content != nil && m.Content != *w.Content {
				t.Errorf("content = %q, want %q", m.Content, *w.Content)
			}
			if w.Content == nil && m.Content != "" {
				t.Errorf("content = %q, want none", m.Content)
			}
			if res.Reasoning != w.Reasoning {
				t.Errorf("reasoning = %q, want %q", res.Reasoning, w.Reasoning)
			}
			if w.Finish != nil && res.FinishReason != *w.Finish {
				t.Errorf("finish = %q, want %q", res.FinishReason, *w.Finish)
			}
			if w.Model != "" && res.Model != w.Model {
				t.Errorf("model = %q, want %q", res.Model, w.Model)
			}
			if w.Usage != nil && res.Usage != *w.Usage {
				t.Errorf("usage = %+v, want %+v", res.Usage, *w.Usage)
			}
			if w.Extra != nil && canonJSON(t, m.Extra) != canonJSON(t, w.Extra) {
				t.Errorf("message extra = %s, want %s", m.Extra, w.Extra)
			}
			var got []wantCall
			for _, tc := range m.ToolCalls {
				if tc.Type != "function" {
					t.Errorf("call %q type = %q", tc.ID, tc.Type)
				}
				got = append(got, wantCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments, Extra: tc.Extra})
			}
			if len(got) != len(w.ToolCalls) {
				t.Fatalf("tool calls = %+v, want %+v", got, w.ToolCalls)
			}
			for i := range got {
				g, x := got[i], w.ToolCalls[i]
				if g.ID != x.ID || g.Name != x.Name || g.Arguments != x.Arguments || canonJSON(t, g.Extra) != canonJSON(t, x.Extra) {
					t.Errorf("tool call %d = %+v (extra %s), want %+v (extra %s)", i, g, g.Extra, x, x.Extra)
				}
			}
			if c.NextAssistant == nil {
				return
			}
			// The next request: the assistant turn as received, then an
			// answer to every call.
			next := append(msgs, m)
			for i, tc := range m.ToolCalls {
				next = append(next, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: fmt.Sprintf("result %d", i)})
			}
			if _, err := client.Complete(context.Background(), llm.Request{Model: model, Messages: next}); err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Messages []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal(second, &sent); err != nil || len(sent.Messages) < 2 {
				t.Fatalf("next request %s: %v", second, err)
			}
			if g, x := canonJSON(t, sent.Messages[1]), canonJSON(t, c.NextAssistant); g != x {
				t.Errorf("next request's assistant message:\n got %s\nwant %s", g, x)
			}
			// And the message survives a session store's JSON round trip.
			b, _ := json.Marshal(m)
			var back llm.Message
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(canonJSON(t, b), canonJSON(t, mustMarshal(t, back))) {
				t.Errorf("Message JSON round trip changed %s into %+v (%v)", b, back, err)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
