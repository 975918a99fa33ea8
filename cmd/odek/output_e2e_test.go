package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm/llmtest"
)

const e2eSchema = `{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer","minimum":0}},"required":["city","population"],"additionalProperties":false}`

func writeSchema(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(p, []byte(e2eSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOutputSchemaValid(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("```json\n{\"city\":\"Oslo\",\"population\":709000}\n```"))
	out := runOdek(t, srv.URL, t.TempDir(), "run", "--quiet", "--json", "--output-schema", writeSchema(t), "largest city of Norway")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	var res struct {
		Status string         `json:"status"`
		Answer string         `json:"answer"`
		Output map[string]any `json:"output"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatal(err, out.stdout)
	}
	if res.Status != "success" || res.Output["city"] != "Oslo" || res.Output["population"] != float64(709000) {
		t.Fatalf("result: %+v", res)
	}
	// The schema reached the model with the goal.
	if goal := srv.Requests()[0].LastMessage().Content; !strings.Contains(goal, `"population"`) || !strings.HasPrefix(goal, "largest city") {
		t.Fatalf("goal sent: %q", goal)
	}
}

func TestOutputSchemaRepaired(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Reply("Oslo has about 709k people."),
		llmtest.Reply(`{"city":"Oslo","population":709000}`),
	)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdek(t, srv.URL, t.TempDir(), "run", "--quiet", "--events-jsonl", evPath, "--output-schema", writeSchema(t), "largest city of Norway")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	if strings.TrimSpace(out.stdout) != `{"city":"Oslo","population":709000}` {
		t.Fatalf("stdout: %q", out.stdout)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	// The repair turn continues the conversation (one run) and says what
	// was wrong.
	msgs := reqs[1].Messages
	if !strings.Contains(msgs[len(msgs)-1].Content, "not a JSON value") || len(msgs) < 4 || !strings.Contains(msgs[len(msgs)-2].Content, "709k") {
		t.Fatalf("repair turn: %+v", msgs)
	}
	evs := readEvents(t, evPath)
	n := 0
	for _, e := range evs {
		if e.Type == "output_invalid" {
			n++
			if fmt.Sprint(e.Data["attempt"]) != "1" {
				t.Errorf("output_invalid data: %v", e.Data)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d output_invalid events", n)
	}
}

func TestOutputSchemaFails(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Reply(`{"city":"Oslo"}`),
		llmtest.Reply(`{"city":"Oslo","population":-1}`),
	)
	out := runOdek(t, srv.URL, t.TempDir(), "run", "--quiet", "--json", "--output-repairs", "1", "--output-schema", writeSchema(t), "largest city of Norway")
	if out.code != 5 {
		t.Fatalf("exit %d, want 5: %s %s", out.code, out.stdout, out.stderr)
	}
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	json.Unmarshal([]byte(out.stdout), &res)
	if res.Status != "output_invalid" || !strings.Contains(res.Error, "/population") {
		t.Fatalf("result: %s", out.stdout)
	}
	// A bad schema is a setup error.
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"$ref":"https://example.com/s.json"}`), 0o644)
	out = runOdek(t, srv.URL, t.TempDir(), "run", "--output-schema", bad, "x")
	if out.code != 3 || !strings.Contains(out.stderr, "--output-schema") {
		t.Fatalf("bad schema: exit %d %s", out.code, out.stderr)
	}
}

// With the model listed in llm.response_format_models the schema also
// goes to the endpoint natively (response_format json_schema, strict
// here because the schema is closed); without it, no response_format is
// sent (most endpoints refuse fields they do not know). The answer is
// checked either way.
func TestOutputSchemaNative(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply(`{"city":"Oslo","population":709000}`), llmtest.Reply(`{"city":"Oslo","population":709000}`))
	home, homeEnv := extOdekHome(t, `{}`)
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"llm":{"response_format_models":["test-model"]}}`), 0o600)
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "--quiet", "--output-schema", writeSchema(t), "largest city of Norway")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	rf := string(srv.Requests()[0].ResponseFormat)
	if !strings.Contains(rf, `"type":"json_schema"`) || !strings.Contains(rf, `"strict":true`) || !strings.Contains(rf, `"population":{"type":"integer","minimum":0}`) {
		t.Fatalf("response_format sent: %s", rf)
	}
	out = runOdek(t, srv.URL, t.TempDir(), "run", "--quiet", "--output-schema", writeSchema(t), "largest city of Norway")
	if out.code != 0 || srv.Requests()[1].ResponseFormat != nil {
		t.Fatalf("without the opt-in: exit %d, response_format %s", out.code, srv.Requests()[1].ResponseFormat)
	}
}
