package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
)

// childEnv makes the test binary act as a child process that continues
// the TRACEPARENT it is given, as `odek run` and `odek subagent` do.
const childEnv = "ODEK_TELEMETRY_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child() error {
	cfg, err := telemetry.FromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	p, err := telemetry.Setup(context.Background(), cfg, telemetry.Options{Service: "odek-child"})
	if err != nil {
		return err
	}
	ctx := telemetry.ContextFromEnv(context.Background(), os.LookupEnv)
	_, s := telemetry.StartTool(ctx, "shell", "call-7")
	s.End()
	sd, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Shutdown(sd); err != nil {
		return err
	}
	if st := p.Stats(); st.Exported != 1 {
		return fmt.Errorf("child exported %+v", st)
	}
	return nil
}

// One trace across two real processes and a job's JSON, in a real Jaeger:
// the parent exports over OTLP/HTTP, the child (this test binary again,
// given TRACEPARENT) over OTLP/gRPC; the query API returns one trace with
// the parent links intact.
func TestJaegerTraceAcrossProcesses(t *testing.T) {
	j := telemetrytest.StartJaeger(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: j.OTLPHTTP + "/v1/traces"},
		telemetry.Options{Service: "odek-parent"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())

	// The front end's span; its context travels inside the job's JSON.
	ctx, enq := telemetry.StartProducer(context.Background(), "odek.enqueue")
	type job struct {
		ID    string            `json:"id"`
		Trace map[string]string `json:"trace,omitempty"`
	}
	wire, err := json.Marshal(job{ID: "j1", Trace: telemetry.ToMap(ctx)})
	if err != nil {
		t.Fatal(err)
	}
	enq.End()
	var got job
	if err := json.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	// The worker continues it.
	wctx, run := telemetry.StartConsumer(telemetry.FromMap(context.Background(), got.Trace), "odek.job.run")
	actx, agent := telemetry.StartAgent(wctx, "run-1", "chat-1", "m")

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(telemetry.WithEnv(actx, os.Environ()), childEnv+"=1",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_SERVICE_NAME=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	agent.End()
	run.End()
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Exported != 3 || st.Dropped != 0 {
		t.Fatalf("parent stats %+v", st)
	}

	tid := enq.SpanContext().TraceID().String()
	spans := j.WaitTrace(t, tid, 4, 60*time.Second)
	by := map[string]telemetrytest.Span{}
	for _, s := range spans {
		if s.TraceID != tid {
			t.Fatalf("span %s in trace %s", s.Operation, s.TraceID)
		}
		by[s.Operation] = s
	}
	want := []struct{ op, parent, service string }{
		{"odek.enqueue", "", "odek-parent"},
		{"odek.job.run", "odek.enqueue", "odek-parent"},
		{"invoke_agent odek", "odek.job.run", "odek-parent"},
		{"execute_tool shell", "invoke_agent odek", "odek-child"},
	}
	for _, w := range want {
		s, ok := by[w.op]
		if !ok {
			t.Fatalf("no span %q in %v", w.op, spans)
		}
		if wantParent := by[w.parent].SpanID; s.Parent() != wantParent {
			t.Errorf("%s: parent %q, want %q (%s)", w.op, s.Parent(), wantParent, w.parent)
		}
		if s.Service != w.service {
			t.Errorf("%s: service %q, want %q", w.op, s.Service, w.service)
		}
	}
	if v, _ := by["execute_tool shell"].Tag("gen_ai.tool.name"); v != "shell" {
		t.Errorf("child span gen_ai.tool.name = %v", v)
	}
	if v, _ := by["invoke_agent odek"].Tag("gen_ai.conversation.id"); v != "chat-1" {
		t.Errorf("gen_ai.conversation.id = %v", v)
	}
}
