package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/outschema"
)

// A run with an output schema returns the parsed answer in Output, and
// what leaves the run is masked: the checker sees the model's answer, but
// Output is parsed from the redacted one, so a key the model put in a
// field is masked there too (it used to be returned as parsed).
func TestRunOutputIsRedacted(t *testing.T) {
	const key = "sk-output-secret-0123456789"
	srv := llmtest.New(t,
		llmtest.Reply(`{"city":"Oslo","note":"`+key+`"}`),
		llmtest.Reply(`no json here`),
	)
	cfg := load(t, `{"model":"m1","base_url":"`+srv.URL+`","api_key":"`+key+`"}`, "")
	h, err := New(context.Background(), cfg, HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	schema, err := outschema.Compile([]byte(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"note":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	oc, err := h.Run(context.Background(), RunSpec{Goal: "city", WorkDir: t.TempDir(), OutputSchema: schema})
	if err != nil || oc.Status != StatusSuccess {
		t.Fatalf("run: %+v %v", oc, err)
	}
	b, _ := json.Marshal(oc.Output)
	if strings.Contains(string(b), key) || strings.Contains(oc.Answer, key) || !strings.Contains(string(b), `"city":"Oslo"`) {
		t.Fatalf("output %s, answer %q", b, oc.Answer)
	}
	// The goal carried the schema.
	if g := srv.Requests()[0].LastMessage().Content; !strings.HasPrefix(g, "city") || !strings.Contains(g, `"required"`) {
		t.Fatalf("goal sent: %q", g)
	}
	// No repairs: an invalid answer ends the run as output_invalid.
	oc, err = h.Run(context.Background(), RunSpec{Goal: "again", WorkDir: t.TempDir(), OutputSchema: schema, OutputRepairs: 0})
	if err == nil || oc.Status != StatusOutputInvalid || oc.ExitCode != ExitOutputInvalid || oc.Output != nil {
		t.Fatalf("invalid run: %+v %v", oc, err)
	}
}
