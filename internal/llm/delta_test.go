package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// A run's DeltaHook hears its own completions' answer text, besides the
// client's OnDelta, and nothing of another run on the same client; Begin
// comes before each attempt's deltas.
func TestDeltaHookPerRun(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "first answer, streamed", ChunkSize: 4}, llmtest.Turn{Content: "second", ChunkSize: 2})
	var client strings.Builder
	c := newClient(t, llm.Config{BaseURL: srv.URL, OnDelta: func(s string) { client.WriteString(s) }})
	var log []string
	var got strings.Builder
	h := &llm.DeltaHook{Begin: func() { log = append(log, "begin") }, Delta: func(s string) { got.WriteString(s); log = append(log, "delta") }}
	if _, err := c.Complete(llm.WithDeltaHook(context.Background(), h), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if got.String() != "first answer, streamed" || len(log) < 3 || log[0] != "begin" || log[1] != "delta" {
		t.Errorf("hook heard %q, calls %v", got.String(), log)
	}
	if _, err := c.Complete(context.Background(), userReq("again")); err != nil { // another run: no hook
		t.Fatal(err)
	}
	if got.String() != "first answer, streamed" {
		t.Errorf("the hook heard another run: %q", got.String())
	}
	if client.String() != "first answer, streamedsecond" {
		t.Errorf("the client's OnDelta heard %q", client.String())
	}
}
