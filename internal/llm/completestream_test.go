package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// A call's delta hears that call's answer text and nothing of another
// call on the same client; a first attempt starts without a Restart.
func TestCompleteStreamPerCall(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "first answer, streamed", ChunkSize: 4}, llmtest.Turn{Content: "second", ChunkSize: 2})
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	var got strings.Builder
	pieces, restarts := 0, 0
	delta := func(d agent.Delta) {
		if d.Restart {
			restarts++
		}
		pieces++
		got.WriteString(d.Text)
	}
	if _, err := c.CompleteStream(context.Background(), userReq("hi"), delta); err != nil {
		t.Fatal(err)
	}
	if got.String() != "first answer, streamed" || pieces < 3 || restarts != 0 {
		t.Errorf("heard %q in %d pieces, %d restarts", got.String(), pieces, restarts)
	}
	if _, err := c.Complete(context.Background(), userReq("again")); err != nil { // another call: nobody listens
		t.Fatal(err)
	}
	if got.String() != "first answer, streamed" {
		t.Errorf("the delta heard another call: %q", got.String())
	}
}
