package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
)

// viewerAPI is the trace viewer's query API as docker-compose.yml
// publishes it (127.0.0.1:16686, this host only).
const viewerAPI = "http://127.0.0.1:16686"

// tracingGoal is the message the tracing stage sends; the fake model
// answers it with a shell call that prints the command's TRACEPARENT, then
// with what the shell printed.
const tracingGoal = "follow this job"

// traceparentRE finds a W3C traceparent the shell printed.
var traceparentRE = regexp.MustCompile(`tp=00-([0-9a-f]{32})-([0-9a-f]{16})-0[0-9a-f]`)

// checkTracing brings up the compose file's `tracing` profile as
// docs/OBSERVABILITY.md tells an operator to (the two OTEL_EXPORTER_OTLP_
// ENDPOINT lines appended to bot.env and worker.env, then `docker compose
// --profile tracing up -d`), sends one Telegram message whose job runs a
// shell command on a worker, and finds the job in the trace viewer's query
// API the way an operator does: the service odek-bot's traces, then the
// one trace by the id the worker logged. That trace must hold the bot's
// spans (the update, the enqueue, the delivery) and the worker's (the job,
// the agent run, the model call, the shell tool), each under the right
// parent across the two containers, and the shell command must have run
// with its tool span's TRACEPARENT inside the worker's sandbox.
func (e *env) checkTracing(t *testing.T) {
	began := time.Now()
	for _, f := range []string{"bot.env", "worker.env"} {
		appendLine(t, filepath.Join(e.dir, f), "OTEL_EXPORTER_OTLP_ENDPOINT=http://trace-viewer:4318")
	}
	e.profiles = []string{"tracing"}
	e.services["trace-viewer"] = 1
	e.unchecked = map[string]bool{"trace-viewer": true} // the image has no healthcheck
	e.timed("docker compose --profile tracing up -d --scale worker=3", func() {
		e.compose("up", "-d", "--scale", "worker=3")
	})
	e.timed("tracing profile healthy", func() { e.waitHealthy(3) })
	e.timed("trace viewer API up", func() { waitViewer(t) })
	for _, svc := range []string{"bot", "worker"} {
		for _, id := range e.ids(svc) {
			if got := e.inspectEnv(t, id)["OTEL_EXPORTER_OTLP_ENDPOINT"]; got != "http://trace-viewer:4318" {
				t.Fatalf("%s %s: OTEL_EXPORTER_OTLP_ENDPOINT=%q after the profile's up", svc, id[:12], got)
			}
		}
	}

	sent := time.Now()
	e.tg.UserMessage(user, user, tracingGoal)
	m := e.waitReply(t, "the job's shell saw")
	answered := time.Now()
	tp := traceparentRE.FindStringSubmatch(plain(m.Text))
	if tp == nil {
		t.Fatalf("the shell in the worker saw no TRACEPARENT: %q", m.Text)
	}
	traceID, shellParent := tp[1], tp[2]

	// The operator's way in: the worker's log line for the job names its
	// trace, and the viewer lists it among odek-bot's traces.
	logged := ""
	waitUntil(t, 30*time.Second, "the worker's job-finished log line with a trace_id", func() bool {
		out, _ := e.composeErr("logs", "--no-color", "worker")
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "worker: job finished") && strings.Contains(line, "trace_id="+traceID) {
				logged = traceID
			}
		}
		return logged != ""
	})
	// The viewer's search as docs/OBSERVABILITY.md has the operator fill
	// it in: service odek-bot, operation telegram.update, the tag of the
	// chat; and the service alone.
	for _, q := range []url.Values{
		{"service": {"odek-bot"}, "operation": {"telegram.update"}, "tag": {fmt.Sprintf("odek.chat.id:%d", user)}},
		{"service": {"odek-bot"}},
	} {
		var listed bool
		waitUntil(t, 60*time.Second, "the trace in the viewer's search "+q.Encode(), func() bool {
			ids, err := searchTraces(q, sent.Add(-time.Minute))
			for _, id := range ids {
				listed = listed || id == traceID
			}
			return err == nil && listed
		})
	}
	found := time.Now()
	// Another chat's tag finds nothing of this one.
	if ids, err := searchTraces(url.Values{"service": {"odek-bot"}, "tag": {"odek.chat.id:6667"}}, sent.Add(-time.Minute)); err != nil || len(ids) != 0 {
		t.Errorf("search for another chat's traces: %v %v, want none", ids, err)
	}

	v := &telemetrytest.Jaeger{Query: viewerAPI}
	want := []struct{ name, parent, service string }{
		{"telegram.update", "", "odek-bot"},
		{"odek.enqueue", "telegram.update", "odek-bot"},
		{"odek.job", "odek.enqueue", "odek-worker"},
		{"odek.job.run", "odek.job", "odek-worker"},
		{"invoke_agent odek", "odek.job.run", "odek-worker"},
		{"chat test-model", "invoke_agent odek", "odek-worker"},
		{"execute_tool shell", "invoke_agent odek", "odek-worker"},
		{"telegram.deliver", "odek.enqueue", "odek-bot"},
	}
	var spans []telemetrytest.Span
	waitUntil(t, 60*time.Second, "every span of the job in the viewer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		spans, _ = v.Trace(ctx, traceID)
		for _, w := range want {
			if byOp(spans, w.name) == nil {
				return false
			}
		}
		return true
	})
	for _, w := range want {
		s := byOp(spans, w.name)
		if s.Service != w.service {
			t.Errorf("%s: service %q, want %q", w.name, s.Service, w.service)
		}
		parent := ""
		if w.parent != "" {
			parent = byOp(spans, w.parent).SpanID
		}
		if s.Parent() != parent {
			t.Errorf("%s: parent %q, want %s (%q)", w.name, s.Parent(), w.parent, parent)
		}
	}
	if got := byOp(spans, "execute_tool shell").SpanID; got != shellParent {
		t.Errorf("the shell's TRACEPARENT names span %s, want the execute_tool shell span %s", shellParent, got)
	}
	if v, ok := byOp(spans, "chat test-model").Tag("gen_ai.request.model"); !ok || v != "test-model" {
		t.Errorf("chat span: gen_ai.request.model = %v", v)
	}
	for _, s := range spans {
		for _, tag := range s.Tags {
			if str, ok := tag.Value.(string); ok && strings.Contains(str, tracingGoal) {
				t.Errorf("%s carries the message text in %s (content capture is off)", s.Operation, tag.Key)
			}
		}
	}
	t.Logf("tracing: message → answer %s; answer → trace listed in the viewer %s; the tracing stage took %s",
		ms(answered.Sub(sent)), ms(found.Sub(answered)), time.Since(began).Round(time.Second))
}

func byOp(spans []telemetrytest.Span, op string) *telemetrytest.Span {
	for i := range spans {
		if spans[i].Operation == op {
			return &spans[i]
		}
	}
	return nil
}

// waitViewer waits for the viewer's query API on the published port.
func waitViewer(t *testing.T) {
	t.Helper()
	waitUntil(t, stage, "the trace viewer's query API on "+viewerAPI, func() bool {
		resp, err := http.Get(viewerAPI + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// searchTraces lists the ids of the traces a search finds since a time,
// as the viewer's search page asks for them (GET /api/traces).
func searchTraces(q url.Values, since time.Time) ([]string, error) {
	q.Set("limit", "50")
	q.Set("start", fmt.Sprint(since.UnixMicro()))
	q.Set("end", fmt.Sprint(time.Now().Add(time.Minute).UnixMicro()))
	resp, err := http.Get(viewerAPI + "/api/traces?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/traces: %s", resp.Status)
	}
	var body struct {
		Data []struct {
			TraceID string `json:"traceID"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	var ids []string
	for _, d := range body.Data {
		ids = append(ids, d.TraceID)
	}
	return ids, nil
}

func waitUntil(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(250 * time.Millisecond) // polling a container and an HTTP API; no event to wait on
	}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + line + "\n"); err != nil {
		t.Fatal(err)
	}
}
