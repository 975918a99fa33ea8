package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
)

// durationBuckets are the upper bounds (seconds) of the run duration
// histogram.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// modelBuckets are the upper bounds (seconds) of the model-call histogram.
var modelBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300}

// Metrics are the worker's counters and histograms, exposed in the
// Prometheus text format (expo.go; Worker.Handler). All methods are safe
// for concurrent use; the zero value is ready.
type Metrics struct {
	Started, Succeeded, Failed, Canceled, Reclaimed, Abandoned, LeaseLost atomic.Uint64
	// Suspects counts jobs this worker ran alone because their previous
	// worker died while running them (queue.Lease.Suspect).
	Suspects atomic.Uint64
	// QueueErrors counts failed calls to the queue (Redis unreachable…).
	QueueErrors atomic.Uint64
	Running     atomic.Int64

	once       sync.Once
	runDur     *histogram
	modelDur   *histogram
	tokens     *counterVec // kind: input, output, cached_input
	cost       *counterVec // no label
	mcpCalls   *counterVec // server
	mcpErrors  *counterVec // server
	statusRuns *histogram  // status
}

func (m *Metrics) init() {
	m.once.Do(func() {
		m.runDur = newHistogram("odek_worker_run_duration_seconds", "Wall-clock duration of job runs.", "", durationBuckets)
		m.statusRuns = newHistogram("odek_worker_job_duration_seconds",
			"Wall-clock duration of jobs whose result was acknowledged here, by status.", "status", durationBuckets)
		m.modelDur = newHistogram("odek_worker_model_call_duration_seconds",
			"Duration of model calls (one per iteration) of the jobs run here.", "", modelBuckets)
		m.tokens = newCounterVec("odek_worker_tokens_total",
			"Model tokens of the jobs whose result was acknowledged here, by kind (input, output, cached_input: the part of input the provider's prompt cache served).", "kind")
		m.cost = newCounterVec("odek_worker_cost_usd_total",
			"Estimated model cost (USD, from the configured prices) of the jobs whose result was acknowledged here.", "")
		m.mcpCalls = newCounterVec("odek_worker_mcp_calls_total", "Calls of MCP extension tools, by server.", "server")
		m.mcpErrors = newCounterVec("odek_worker_mcp_call_errors_total", "Failed calls of MCP extension tools, by server.", "server")
	})
}

// ObserveRun records one finished run's wall-clock duration.
func (m *Metrics) ObserveRun(d time.Duration) {
	m.init()
	m.runDur.observe("", d.Seconds())
}

// observeResult records an acknowledged result: its duration by status,
// tokens and cost.
func (m *Metrics) observeResult(res queue.Result, d time.Duration) {
	m.init()
	m.statusRuns.observe(string(res.Status), d.Seconds())
	m.tokens.add("input", float64(res.Usage.PromptTokens))
	m.tokens.add("output", float64(res.Usage.CompletionTokens))
	m.tokens.add("cached_input", float64(res.Usage.CachedTokens))
	m.cost.add("", max(res.Usage.CostUSD, 0))
}

// observeEvent records what the metrics take from a run's events: model
// call durations and MCP tool calls (tools named server__tool).
func (m *Metrics) observeEvent(ev *events.Event) {
	m.init()
	switch ev.Type {
	case events.IterationCompleted:
		var d events.IterationCompletedData
		d.Decode(ev.Data)
		if ms := d.CallDuration.Milliseconds(); ms > 0 {
			m.modelDur.observe("", float64(ms)/1000)
		}
	case events.ToolCallCompleted, events.ToolCallFailed:
		server, _, ok := strings.Cut(ev.Tool, "__")
		if !ok || server == "" {
			return
		}
		m.mcpCalls.add(server, 1)
		if ev.Type == events.ToolCallFailed {
			m.mcpErrors.add(server, 1)
		}
	}
}

// write writes every worker metric. dead, when non-nil, supplies the
// dead-letter and suspect counts of the queue value.
func (m *Metrics) write(e *expo, dead queue.DeadLetterCounter) {
	m.init()
	counter := func(name, help string, v *atomic.Uint64) {
		scalar{name, help, "counter", func() float64 { return float64(v.Load()) }}.write(e)
	}
	counter("odek_worker_jobs_started_total", "Jobs this worker started running.", &m.Started)
	counter("odek_worker_jobs_succeeded_total", "Jobs finished with status succeeded.", &m.Succeeded)
	counter("odek_worker_jobs_failed_total", "Jobs finished with status failed.", &m.Failed)
	counter("odek_worker_jobs_canceled_total", "Jobs finished with status canceled.", &m.Canceled)
	counter("odek_worker_jobs_reclaimed_total", "Jobs started here after another worker's lease expired (attempt > 1).", &m.Reclaimed)
	counter("odek_worker_jobs_suspect_total", "Jobs run here alone because their previous worker died while running them.", &m.Suspects)
	counter("odek_worker_jobs_abandoned_total", "Jobs left unacknowledged for redelivery (shutdown, panic in the runner).", &m.Abandoned)
	counter("odek_worker_jobs_lease_lost_total", "Jobs whose lease another worker took over while they ran; their result was dropped.", &m.LeaseLost)
	counter("odek_worker_queue_errors_total", "Failed calls to the queue.", &m.QueueErrors)
	scalar{"odek_worker_jobs_running", "Jobs running in this worker now.", "gauge", func() float64 { return float64(m.Running.Load()) }}.write(e)
	m.runDur.write(e)
	m.statusRuns.write(e)
	m.modelDur.write(e)
	m.tokens.write(e)
	m.cost.write(e)
	m.mcpCalls.write(e)
	m.mcpErrors.write(e)
	if dead != nil {
		scalar{"odek_worker_jobs_dead_lettered_total", "Jobs this worker's claims moved to the dead-letter stream.", "counter",
			func() float64 { return float64(dead.DeadLettered()) }}.write(e)
		scalar{"odek_worker_jobs_suspected_total", "Jobs this worker's expired-lease scans found abandoned and made suspects.", "counter",
			func() float64 { return float64(dead.Suspected()) }}.write(e)
	}
}

// writeQueue writes the whole queue's state, asked with a 1 s timeout;
// nothing when the queue does not answer.
func writeQueue(e *expo, s statser) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := s.Stats(ctx)
	if err != nil {
		return
	}
	e.header("odek_queue_jobs", "Unfinished jobs in the queue by state: queued (all waiting, also behind a busy chat), ready (heads of their chat), suspect (waiting to run alone), running (held by a lease).", "gauge")
	for _, kv := range []struct {
		state string
		n     int64
	}{{"queued", st.Queued}, {"ready", st.Ready}, {"suspect", st.Suspects}, {"running", st.Running}} {
		e.sample("odek_queue_jobs", "state", kv.state, "", "", float64(kv.n))
	}
	gauge := func(name, help string, v float64) { scalar{name, help, "gauge", func() float64 { return v }}.write(e) }
	gauge("odek_queue_depth", "Jobs ready to run and not claimed.", float64(st.Ready))
	gauge("odek_queue_pending", "Jobs claimed by some worker (running or with an expired lease).", float64(st.Running))
	gauge("odek_queue_dead_letters", "Jobs in the dead-letter stream.", float64(st.Dead))
	gauge("odek_queue_results_pending", "Results not yet acknowledged by a front end.", float64(st.Results))
	var age float64
	if !st.OldestQueued.IsZero() {
		age = max(time.Since(st.OldestQueued).Seconds(), 0)
	}
	gauge("odek_queue_oldest_queued_age_seconds", "Age of the oldest queued job (0 when none).", age)
	e.header("odek_queue_running_by_worker", "Leases held per worker name.", "gauge")
	for _, w := range sortedKeys(st.RunningBy) {
		e.sample("odek_queue_running_by_worker", "worker", w, "", "", float64(st.RunningBy[w]))
	}
}

// statser is the part of queue.Operator the metrics need.
type statser interface {
	Stats(ctx context.Context) (queue.Stats, error)
}

// Handler serves GET /healthz (JSON: 200 with "status": "ok" while the
// worker is running and its last queue call succeeded, 503 with "status":
// "unhealthy" and the "reason" otherwise, plus Config.Health's fields) and GET
// /metrics (the Prometheus text format 0.0.4: the worker's metrics, those
// added with AddCounterFunc, the queue's gauges when the queue implements
// queue.Operator, asked with a 1 s timeout, and the Go runtime's and the
// process's figures).
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) {
		body := map[string]any{}
		if w.cfg.Health != nil {
			for k, v := range w.cfg.Health() {
				body[k] = v
			}
		}
		body["status"], body["worker"] = "ok", w.Name()
		code := http.StatusOK
		if reason := w.unhealthy(); reason != "" {
			body["status"], body["reason"] = "unhealthy", reason
			code = http.StatusServiceUnavailable
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(code)
		_ = json.NewEncoder(rw).Encode(body)
	})
	mux.HandleFunc("GET /metrics", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		e := &expo{w: bufio.NewWriter(rw)}
		w.writeMetrics(e)
		_ = e.w.Flush()
	})
	return mux
}

func (w *Worker) writeMetrics(e *expo) {
	dead, _ := w.cfg.Queue.(queue.DeadLetterCounter)
	w.metrics.write(e, dead)
	w.extraMu.Lock()
	extra := w.extra
	w.extraMu.Unlock()
	for _, s := range extra {
		s.write(e)
	}
	if s, ok := w.cfg.Queue.(statser); ok {
		writeQueue(e, s)
	}
	writeRuntime(e)
}

// AddCounterFunc adds a counter to the worker's /metrics whose value value
// returns at scrape time (odek worker's odek_redis_master_changes_total).
// name must be a valid Prometheus metric name not used yet.
func (w *Worker) AddCounterFunc(name, help string, value func() float64) error {
	if !validMetricName(name) {
		return fmt.Errorf("worker: metric name %q is not [a-zA-Z_:][a-zA-Z0-9_:]*", name)
	}
	w.extraMu.Lock()
	defer w.extraMu.Unlock()
	for _, s := range w.extra {
		if s.name == name {
			return fmt.Errorf("worker: metric %q added twice", name)
		}
	}
	if strings.HasPrefix(name, "odek_worker_") || strings.HasPrefix(name, "odek_queue_") || strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
		return fmt.Errorf("worker: metric %q is in a namespace the worker writes itself", name)
	}
	w.extra = append(w.extra, scalar{name, help, "counter", value})
	return nil
}

func validMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
