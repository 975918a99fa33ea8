//go:build unix

package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/telemetry"
)

type benchModel struct{}

func (benchModel) Complete(context.Context, agent.Request) (*agent.Response, error) {
	return &agent.Response{Model: "m", FinishReason: "tool_calls", Usage: agent.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 50},
		Timing: agent.Timing{Duration: time.Millisecond, TTFT: 100 * time.Microsecond, Attempts: 1}}, nil
}

type benchTool struct{}

func (benchTool) Definition() agent.Definition { return agent.Definition{Name: "read_file"} }
func (benchTool) Assess(json.RawMessage) (agent.Assessment, error) {
	return agent.Assessment{Class: "safe"}, nil
}
func (benchTool) Run(context.Context, json.RawMessage) (agent.ToolResult, error) {
	return agent.ToolResult{Text: "ok"}, nil
}

// BenchmarkTracedCall is what tracing in place adds to one loop iteration
// (one model call and one tool call through host's wrappers), in-process:
// off (nothing wrapped), and on towards a collector that accepts and
// discards. cpu-ns/op is the process's CPU time (rusage: the export
// goroutine and the GC included) per iteration, which a loaded machine
// does not inflate the way it does ns/op.
func BenchmarkTracedCall(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			if on {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/x-protobuf")
				}))
				defer srv.Close()
				p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: srv.URL + "/v1/traces", QueueSize: 1 << 16},
					telemetry.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Shutdown(context.Background())
				defer func() { b.ReportMetric(float64(p.Stats().Dropped), "dropped") }()
			}
			m := traceModel(benchModel{}, "m")
			tools := traceTools([]agent.Tool{benchTool{}})
			ctx, run := startAgentSpan(context.Background(), "r", "s", "m")
			defer run.End()
			args := json.RawMessage(`{"path":"a"}`)
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := m.Complete(ctx, agent.Request{Model: "m"}); err != nil {
					b.Fatal(err)
				}
				if _, err := tools[0].Run(ctx, args); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
