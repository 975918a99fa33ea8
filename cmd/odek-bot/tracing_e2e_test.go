package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// One trace from a Telegram message to the shell command on the worker
// that ran it (issue 24), in a real OpenTelemetry Collector: the real
// odek-bot (embedded, and distributed with a real `odek worker` on a real
// Redis), the strict Telegram fake, the fake model asking for a shell
// call. telegram.update → odek.enqueue → odek.job → odek.job.run →
// invoke_agent → chat / execute_tool shell, the shell command under its
// tool span, and telegram.deliver in the same trace linked to the update.
func TestE2EMessageIsOneTraceInCollector(t *testing.T) {
	for _, mode := range []string{"embedded", "distributed"} {
		t.Run(mode, func(t *testing.T) {
			col := telemetrytest.StartCollector(t)
			llm := llmtest.New(t,
				llmtest.CallTools(llmtest.Call{ID: "s1", Name: "shell", Arguments: `{"command":"echo tp=$TRACEPARENT"}`}),
				llmtest.Reply("traced answer"))
			otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.OTLPHTTP, "OTEL_BSP_SCHEDULE_DELAY=10"}
			var tg *bottest.Server
			worker := "odek-worker"
			if mode == "embedded" {
				_, odekBot := binaries(t)
				tg = bottest.New(t)
				start(t, "odek-bot", odekBot, append([]string{
					"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
					"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
					"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
					"ODEK_HOME=" + t.TempDir(), "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
				}, otel...))
				worker = "odek-bot"
			} else {
				in := newInstance(t, llm.URL, otel...)
				in.worker("w1")
				tg = in.tg
			}
			tg.UserMessage(1001, 1001, "the secret prompt words")
			tg.Wait(t, 60*time.Second, "reply", func(s *bottest.Server) bool { return visible(s, 1001, "traced answer") })

			find := func(spans []*tracepb.Span, name string) *tracepb.Span { return telemetrytest.ByName(spans, name) }
			spans := col.WaitSpans(t, 30*time.Second, func(s []*tracepb.Span) bool {
				return find(s, "telegram.deliver") != nil && find(s, "odek.job") != nil
			})
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
			reqs := llm.Requests()
			want := "tp=00-" + tid + "-" + telemetrytest.Hex(find(spans, "execute_tool shell").GetSpanId()) + "-01"
			if len(reqs) < 2 || !strings.Contains(reqs[1].LastMessage().Content, want) {
				t.Errorf("shell output does not carry its span's traceparent %q", want)
			}
			for _, s := range spans {
				for _, a := range s.GetAttributes() {
					if strings.Contains(a.GetValue().GetStringValue(), "secret prompt") {
						t.Errorf("%s carries the message text in %s", s.GetName(), a.GetKey())
					}
				}
			}
		})
	}
}
