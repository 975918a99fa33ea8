package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// corpusBody reads a recorded provider response of internal/llm's corpus.
func corpusBody(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "llm", "testdata", "providers", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assistantWithCalls returns the request's assistant message that made
// tool calls, and the tool messages after it.
func assistantWithCalls(r llmtest.Recorded) (llm.Message, []llm.Message, bool) {
	for i, m := range r.Messages {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			return m, r.Messages[i+1:], true
		}
	}
	return llm.Message{}, nil, false
}

// extraString returns the string member key of a JSON object (or a nested
// path like "extra_content.google.thought_signature").
func extraString(raw json.RawMessage, path string) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// A tool-using run completes through the real binary against the recorded
// bodies of a DeepSeek thinking model, Gemini 3 and Mistral Magistral,
// with the fake answering the second request the way each provider does
// when what it required is missing. Before issue 11 all three failed on
// iteration 2 (or, for Magistral, ended with an empty answer).
func TestRunProviderRoundTrips(t *testing.T) {
	const notes = "odek notes: the answer is 42\n"
	var mistralID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	geminiSchema := func(r llmtest.Recorded) string {
		for _, tool := range r.Tools {
			for _, bad := range []string{`"$schema"`, `"$ref"`, `"additionalProperties"`, `"const"`} {
				if strings.Contains(string(tool.Function.Parameters), bad) {
					return `Invalid JSON payload received. Unknown name ` + bad + ` at 'tools[0].function_declarations[0].parameters': Cannot find field.`
				}
			}
		}
		return ""
	}
	tests := []struct {
		name, provider   string
		call, answer     string
		reasoning        string // must never reach stdout
		checkCall, check func(llmtest.Recorded) string
		checkStatus      int
	}{
		{
			name: "deepseek thinking", provider: "deepseek",
			call: "deepseek/e2e-thinking-read-file.sse", answer: "deepseek/e2e-thinking-answer.sse",
			reasoning: "I will read it with read_file",
			check: func(r llmtest.Recorded) string {
				a, _, ok := assistantWithCalls(r)
				if !ok || extraString(a.Extra, "reasoning_content") != "The user wants notes.txt. I will read it with read_file." {
					return "The reasoning_content in the thinking mode must be passed back to the API."
				}
				return ""
			},
		},
		{
			name: "gemini 3", provider: "gemini",
			call: "gemini/e2e-3-read-file.sse", answer: "gemini/e2e-3-answer.sse",
			checkCall: geminiSchema,
			check: func(r llmtest.Recorded) string {
				if msg := geminiSchema(r); msg != "" {
					return msg
				}
				a, _, ok := assistantWithCalls(r)
				if !ok || extraString(a.ToolCalls[0].Extra, "extra_content.google.thought_signature") != "Cs4BAdHtim9kE2eReadNotesSignaturePQ2cR7tNnA1bFIKXgGPPWtf" {
					return "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:read_file` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
				}
				return ""
			},
		},
		{
			name: "mistral magistral", provider: "mistral",
			call: "mistral/e2e-magistral-read-file.sse", answer: "mistral/e2e-magistral-answer.sse",
			reasoning:   "Read notes.txt first",
			checkStatus: 422,
			checkCall: func(r llmtest.Recorded) string {
				if r.StreamOptions != nil {
					return `[{"type":"extra_forbidden","loc":["body","stream_options","include_usage"],"msg":"Extra inputs are not permitted","input":true}]`
				}
				return ""
			},
			check: func(r llmtest.Recorded) string {
				if r.StreamOptions != nil {
					return `[{"type":"extra_forbidden","loc":["body","stream_options","include_usage"],"msg":"Extra inputs are not permitted","input":true}]`
				}
				a, results, ok := assistantWithCalls(r)
				if !ok || a.ToolCalls[0].ID != "nT4kR8pQz" || len(results) == 0 || results[0].ToolCallID != a.ToolCalls[0].ID || !mistralID.MatchString(results[0].ToolCallID) {
					return "Tool call id was " + a.ToolCalls[0].ID + " but must be a-z, A-Z, 0-9, with a length of 9."
				}
				return ""
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte(notes), 0o644); err != nil {
				t.Fatal(err)
			}
			srv := llmtest.New(t,
				llmtest.Turn{Raw: corpusBody(t, tt.call), RawContentType: "text/event-stream", Check: tt.checkCall, CheckStatus: tt.checkStatus},
				llmtest.Turn{Raw: corpusBody(t, tt.answer), RawContentType: "text/event-stream", Check: tt.check, CheckStatus: tt.checkStatus},
			)
			out := runOdekEnv(t, srv.URL, work, []string{"ODEK_PROVIDER=" + tt.provider}, "run", "--quiet", "what do my notes say?")
			if out.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
			}
			if out.stdout != "The notes say the answer is 42.\n" {
				t.Fatalf("stdout %q", out.stdout)
			}
			if tt.reasoning != "" && (strings.Contains(out.stdout, tt.reasoning) || strings.Contains(out.stderr, tt.reasoning)) {
				t.Fatalf("reasoning leaked to the output: %q %q", out.stdout, out.stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			last := reqs[1].LastMessage()
			if last.Role != llm.RoleTool || !strings.Contains(last.Content, "the answer is 42") {
				t.Fatalf("the tool result did not reach the model: %+v", last)
			}
		})
	}
}
