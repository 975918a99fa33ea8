package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	"github.com/odekrun/odek/mcpclient/mcptest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// traceHome writes an operator config whose one MCP server is the real
// stdio fixture (mcpclient/testdata; -chaos offers its trace_seen tool), approved by the operator file as a
// worker's servers are, and returns ODEK_HOME=… for it.
func traceHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), ".odek")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"mcp_servers":{"fx":{"command":%q,"args":["-chaos"],"auto_approve":true}}}`, mcptest.FixturePath(t))
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return "ODEK_HOME=" + home
}

// One trace from a Telegram message to the shell command and the MCP
// server on the worker that ran it (issue 24), in a real OpenTelemetry
// Collector: the real odek-bot (embedded, and distributed with a real
// `odek worker` on a real Redis), the strict Telegram fake, a real stdio
// MCP server, the fake model asking for a shell call and then an MCP tool.
// telegram.update → odek.enqueue → odek.job → odek.job.run → invoke_agent
// → chat / execute_tool shell / execute_tool fx__trace_seen → tools/call fx,
// the shell command under its tool span (TRACEPARENT), the MCP server
// under the request's span (params._meta.traceparent), and
// telegram.deliver in the same trace linked to the update. The spans carry
// the GenAI attributes and no message text, unless the operator turns
// content capture on (the last case), when the text is there and the
// model key the worker holds is masked.
func TestE2EMessageIsOneTraceInCollector(t *testing.T) {
	const key = "sk-test-key-0123456789abcdef"
	for _, tc := range []struct {
		mode    string
		capture bool
	}{{"embedded", false}, {"distributed", false}, {"distributed", true}} {
		name := tc.mode
		if tc.capture {
			name += "+capture"
		}
		t.Run(name, func(t *testing.T) {
			col := telemetrytest.StartCollector(t)
			llm := llmtest.New(t,
				llmtest.CallTools(llmtest.Call{ID: "s1", Name: "shell", Arguments: `{"command":"echo tp=$TRACEPARENT"}`}),
				llmtest.CallTools(llmtest.Call{ID: "m1", Name: "fx__trace_seen", Arguments: `{}`}),
				llmtest.Reply("traced answer "+key))
			otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.OTLPHTTP, "OTEL_BSP_SCHEDULE_DELAY=10", traceHome(t)}
			if tc.capture {
				otel = append(otel, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
			}
			var tg *bottest.Server
			worker := "odek-worker"
			if tc.mode == "embedded" {
				_, odekBot := binaries(t)
				tg = bottest.New(t)
				start(t, "odek-bot", odekBot, append([]string{
					"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
					"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
					"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=" + key,
					"ODEK_ARTIFACTS_DIR=" + t.TempDir(),
				}, otel...))
				worker = "odek-bot"
			} else {
				in := newInstance(t, llm.URL, otel...)
				in.worker("w1")
				tg = in.tg
			}
			tg.UserMessage(1001, 1001, "the secret prompt words")
			tg.Wait(t, 90*time.Second, "reply", func(s *bottest.Server) bool { return visible(s, 1001, "traced answer") })

			find := func(spans []*tracepb.Span, name string) *tracepb.Span { return telemetrytest.ByName(spans, name) }
			spans := col.WaitSpans(t, 30*time.Second, func(s []*tracepb.Span) bool {
				return find(s, "telegram.deliver") != nil && find(s, "odek.job") != nil && find(s, "tools/call fx") != nil
			})
			defer func() {
				if t.Failed() {
					for _, s := range spans {
						t.Logf("span %q id %s parent %s service %s", s.GetName(), telemetrytest.Hex(s.GetSpanId()), telemetrytest.Hex(s.GetParentSpanId()), col.Service(s))
					}
				}
			}()
			update := find(spans, "telegram.update")
			if update == nil {
				t.Fatalf("no telegram.update span among %d", len(spans))
			}
			tid := telemetrytest.Hex(update.GetTraceId())
			chain := []struct{ name, parent, service string }{
				{"odek.enqueue", "telegram.update", "odek-bot"},
				{"odek.job", "odek.enqueue", worker},
				{"odek.job.run", "odek.job", worker},
				{"invoke_agent odek", "odek.job.run", worker},
				{"chat test-model", "invoke_agent odek", worker},
				{"execute_tool shell", "invoke_agent odek", worker},
				{"execute_tool fx__trace_seen", "invoke_agent odek", worker},
				{"tools/call fx", "execute_tool fx__trace_seen", worker},
				{"telegram.deliver", "odek.enqueue", "odek-bot"},
			}
			for _, c := range chain {
				s, p := find(spans, c.name), find(spans, c.parent)
				if s == nil || p == nil {
					t.Fatalf("no span %q or %q among %d", c.name, c.parent, len(spans))
				}
				if telemetrytest.Hex(s.GetTraceId()) != tid || telemetrytest.Hex(s.GetParentSpanId()) != telemetrytest.Hex(p.GetSpanId()) {
					t.Errorf("%s: not a child of %s in the update's trace", c.name, c.parent)
				}
				if got := col.Service(s); got != c.service {
					t.Errorf("%s: service %q, want %q", c.name, got, c.service)
				}
			}
			if l := find(spans, "telegram.deliver").GetLinks(); len(l) != 1 || telemetrytest.Hex(l[0].GetSpanId()) != telemetrytest.Hex(update.GetSpanId()) {
				t.Errorf("delivery links %v, want the update's span", l)
			}

			// The GenAI semantic conventions' attributes, on the spans they
			// belong to.
			for _, a := range []struct{ span, key, want string }{
				{"invoke_agent odek", "gen_ai.operation.name", "invoke_agent"},
				{"chat test-model", "gen_ai.operation.name", "chat"},
				{"chat test-model", "gen_ai.request.model", "test-model"},
				{"chat test-model", "gen_ai.usage.input_tokens", ""},
				{"chat test-model", "gen_ai.usage.output_tokens", ""},
				{"execute_tool shell", "gen_ai.operation.name", "execute_tool"},
				{"execute_tool shell", "gen_ai.tool.name", "shell"},
				{"execute_tool shell", "gen_ai.tool.call.id", "s1"},
				{"execute_tool fx__trace_seen", "gen_ai.tool.name", "fx__trace_seen"},
				{"tools/call fx", "mcp.method.name", "tools/call"},
				{"odek.enqueue", "gen_ai.conversation.id", ""},
			} {
				v, ok := telemetrytest.Attr(find(spans, a.span), a.key)
				if !ok || (a.want != "" && fmt.Sprint(v) != a.want) {
					t.Errorf("%s: %s = %v (set %v), want %q", a.span, a.key, v, ok, a.want)
				}
			}
			var chats int
			for _, s := range spans {
				if s.GetName() == "chat test-model" && telemetrytest.Hex(s.GetTraceId()) == tid {
					chats++
				}
			}
			if chats != 3 {
				t.Errorf("%d chat spans in the trace, want one per model call (3)", chats)
			}

			// The context crossed into the shell's environment and into the
			// MCP server's request.
			reqs := llm.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests, want 3", len(reqs))
			}
			want := "tp=00-" + tid + "-" + telemetrytest.Hex(find(spans, "execute_tool shell").GetSpanId()) + "-01"
			if !strings.Contains(reqs[1].LastMessage().Content, want) {
				t.Errorf("shell output does not carry its span's traceparent %q", want)
			}
			var seen struct {
				Meta string `json:"meta_traceparent"`
			}
			got := reqs[2].LastMessage().Content
			if i, j := strings.Index(got, "{"), strings.LastIndex(got, "}"); i >= 0 && j > i {
				_ = json.Unmarshal([]byte(got[i:j+1]), &seen)
			}
			if want := "00-" + tid + "-" + telemetrytest.Hex(find(spans, "tools/call fx").GetSpanId()) + "-01"; seen.Meta != want {
				t.Errorf("MCP server saw _meta.traceparent %q, want %q (result %q)", seen.Meta, want, got)
			}

			// Content: none by default; with capture on, the prompt is on
			// the chat span and the worker's model key is masked.
			var prompt bool
			for _, s := range spans {
				for _, a := range s.GetAttributes() {
					v := a.GetValue().GetStringValue()
					if strings.Contains(v, "secret prompt") {
						prompt = true
						if !tc.capture {
							t.Errorf("%s carries the message text in %s", s.GetName(), a.GetKey())
						}
					}
					if strings.Contains(v, key) {
						t.Errorf("%s carries the model key in %s", s.GetName(), a.GetKey())
					}
				}
			}
			if tc.capture {
				in, _ := telemetrytest.Attr(find(spans, "chat test-model"), "gen_ai.input.messages")
				if !prompt || !strings.Contains(fmt.Sprint(in), "secret prompt") {
					t.Errorf("capture on: the prompt is not on the chat span (gen_ai.input.messages %v)", in)
				}
				var out bool
				for _, s := range spans {
					if v, ok := telemetrytest.Attr(s, "gen_ai.output.messages"); ok && strings.Contains(fmt.Sprint(v), "traced answer") {
						out = true
					}
				}
				if !out {
					t.Error("capture on: no chat span carries the answer")
				}
			}
		})
	}
}
