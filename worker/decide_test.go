package worker

import (
	"bufio"
	"context"

	"bytes"
	"errors"
	"github.com/odekrun/odek/agent"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
)

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		attempt   int
		base, cap time.Duration
		jitter    float64
		want      time.Duration
	}{
		{1, 100 * ms, 5 * time.Second, 0, 75 * ms},
		{1, 100 * ms, 5 * time.Second, 0.5, 87500 * time.Microsecond},
		{2, 100 * ms, 5 * time.Second, 0, 150 * ms},
		{3, 100 * ms, 5 * time.Second, 0, 300 * ms},
		{10, 100 * ms, 5 * time.Second, 0, 3750 * ms},
		{100, 100 * ms, 5 * time.Second, 0, 3750 * ms},
		{0, 100 * ms, 5 * time.Second, 0, 75 * ms},
		{1, 0, 0, 0, 37500 * time.Microsecond},
		{2, 100 * ms, 50 * ms, 0, 75 * ms},     // cap below base: base
		{1, 100 * ms, time.Second, 7, 75 * ms}, // bad jitter ignored
	} {
		if got := Backoff(tc.attempt, tc.base, tc.cap, tc.jitter); got != tc.want {
			t.Errorf("Backoff(%d, %v, %v, %v) = %v, want %v", tc.attempt, tc.base, tc.cap, tc.jitter, got, tc.want)
		}
	}
}

func TestDecideResult(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		in       queue.Result
		err      error
		canceled bool
		want     queue.Result
	}{
		{"success", queue.Result{Answer: "a"}, nil, false, queue.Result{Answer: "a", Status: queue.StatusSucceeded, DurationMS: 5}},
		{"error", queue.Result{Answer: "part"}, boom, false, queue.Result{Answer: "part", Status: queue.StatusFailed, Error: "boom", DurationMS: 5}},
		{"runner status kept", queue.Result{Status: queue.StatusFailed, ExitCode: 4, Error: "budget", DurationMS: 9}, boom, false,
			queue.Result{Status: queue.StatusFailed, ExitCode: 4, Error: "budget", DurationMS: 9}},
		{"canceled wins", queue.Result{Status: queue.StatusFailed}, nil, true, queue.Result{Status: queue.StatusCanceled, Error: "canceled by request", DurationMS: 5}},
	} {
		if got := decideResult(tc.in, tc.err, tc.canceled, 5*time.Millisecond); got.Status != tc.want.Status || got.Error != tc.want.Error ||
			got.DurationMS != tc.want.DurationMS || got.Answer != tc.want.Answer || got.ExitCode != tc.want.ExitCode {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

type fixedDead struct{ dead, suspected uint64 }

func (f fixedDead) DeadLettered() uint64 { return f.dead }
func (f fixedDead) Suspected() uint64    { return f.suspected }

func TestHistogramBuckets(t *testing.T) {
	var m Metrics
	m.ObserveRun(3 * time.Millisecond)
	m.ObserveRun(700 * time.Millisecond)
	m.ObserveRun(time.Hour)
	m.observeEvent(&events.Event{Type: events.IterationCompleted, Data: map[string]any{"call_duration_ms": 1500}})
	m.observeEvent(&events.Event{Type: events.ToolCallCompleted, Tool: "files__read"})
	m.observeEvent(&events.Event{Type: events.ToolCallFailed, Tool: "files__read"})
	m.observeEvent(&events.Event{Type: events.ToolCallCompleted, Tool: "shell"}) // built-in: not MCP
	m.observeResult(queue.Result{Status: queue.StatusSucceeded, Usage: queue.Usage{PromptTokens: 10, CompletionTokens: 4, CachedTokens: 6, CostUSD: 0.25}}, 2*time.Second)
	var buf bytes.Buffer
	e := &expo{w: bufio.NewWriter(&buf)}
	m.write(e, fixedDead{2, 5})
	e.w.Flush()
	body := buf.String()
	for _, want := range []string{
		`odek_worker_run_duration_seconds_bucket{le="0.005"} 1` + "\n",
		`odek_worker_run_duration_seconds_bucket{le="0.5"} 1` + "\n",
		`odek_worker_run_duration_seconds_bucket{le="1"} 2` + "\n",
		`odek_worker_run_duration_seconds_bucket{le="600"} 2` + "\n",
		`odek_worker_run_duration_seconds_bucket{le="+Inf"} 3` + "\n",
		"odek_worker_run_duration_seconds_count 3\n",
		"odek_worker_jobs_dead_lettered_total 2\n",
		"odek_worker_jobs_suspected_total 5\n",
		`odek_worker_model_call_duration_seconds_bucket{le="2"} 1` + "\n",
		`odek_worker_mcp_calls_total{server="files"} 2` + "\n",
		`odek_worker_mcp_call_errors_total{server="files"} 1` + "\n",
		`odek_worker_tokens_total{kind="input"} 10` + "\n",
		`odek_worker_tokens_total{kind="output"} 4` + "\n",
		`odek_worker_tokens_total{kind="cached_input"} 6` + "\n",
		"odek_worker_cost_usd_total 0.25\n",
		`odek_worker_job_duration_seconds_count{status="succeeded"} 1` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q in\n%s", want, body)
		}
	}
	if strings.Contains(body, "odek_queue_depth") || strings.Contains(body, `server="shell"`) {
		t.Error("queue gauges written without a queue, or a built-in tool counted as MCP")
	}
}

// The hand-written exposition is read back by Prometheus's own text
// parser (prometheus/common/expfmt, test-only): every family parses, with
// the type declared, and label values that need escaping survive.
func TestExpositionParsesWithPrometheus(t *testing.T) {
	var m Metrics
	m.ObserveRun(2 * time.Second)
	m.observeEvent(&events.Event{Type: events.ToolCallCompleted, Tool: "we\"ird\\name\nx__t"})
	m.observeResult(queue.Result{Status: queue.StatusFailed, Usage: queue.Usage{PromptTokens: 3}}, time.Second)
	var buf bytes.Buffer
	e := &expo{w: bufio.NewWriter(&buf)}
	m.write(e, fixedDead{1, 0})
	writeRuntime(e)
	e.w.Flush()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v in\n%s", err, buf.String())
	}
	h := fams["odek_worker_run_duration_seconds"]
	if h == nil || h.GetType() != dto.MetricType_HISTOGRAM || h.Metric[0].GetHistogram().GetSampleCount() != 1 || h.Metric[0].GetHistogram().GetSampleSum() != 2 {
		t.Fatalf("run duration %v", h)
	}
	c := fams["odek_worker_mcp_calls_total"]
	if c == nil || c.Metric[0].Label[0].GetValue() != "we\"ird\\name\nx" {
		t.Fatalf("mcp calls %v", c)
	}
	if fams["go_goroutines"] == nil || fams["odek_worker_jobs_dead_lettered_total"].GetType() != dto.MetricType_COUNTER {
		t.Fatal("runtime or dead-letter families missing")
	}
}

func TestAddCounterFuncRefusesBadNames(t *testing.T) {
	w, err := New(Config{Queue: queue.NewMemory(queue.Options{}), Run: func(context.Context, queue.Job, events.Sink, func(agent.SignalEvent), agent.Prompter) (queue.Result, error) {
		return queue.Result{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "9x", "a-b", "odek_worker_x", "go_x"} {
		if w.AddCounterFunc(name, "h", func() float64 { return 0 }) == nil {
			t.Errorf("%q accepted", name)
		}
	}
	if err := w.AddCounterFunc("odek_redis_master_changes_total", "h", func() float64 { return 1 }); err != nil {
		t.Fatal(err)
	}
	if w.AddCounterFunc("odek_redis_master_changes_total", "h", func() float64 { return 1 }) == nil {
		t.Error("a name added twice")
	}
}
