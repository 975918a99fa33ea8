package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Through the strict fake endpoint: a strict schema passes its checks
// (the fake rejects a strict schema that is not closed, as the endpoint
// does), and the request carries the schema.
func TestResponseFormatAcceptedByTheEndpoint(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply(`{"city":"Oslo"}`), llmtest.Reply(`{"city":"Oslo"}`))
	c, err := llm.New(llm.Config{BaseURL: srv.URL, ResponseFormatModels: []string{"m"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{
		`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`,
		`{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}}}`,
	} {
		if _, err := c.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "city?"}}, OutputSchema: json.RawMessage(schema)}); err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].ResponseFormat), `"strict":true`) || !strings.Contains(string(reqs[1].ResponseFormat), `"strict":false`) {
		t.Fatalf("requests: %d, %s / %s", len(reqs), reqs[0].ResponseFormat, reqs[len(reqs)-1].ResponseFormat)
	}
}
