package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
)

// durationBuckets are the upper bounds (seconds) of the run duration
// histogram.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// modelBuckets are the upper bounds (seconds) of the model-call histogram.
var modelBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300}

// Metrics are the worker's counters and histograms, exposed in the
// Prometheus format by github.com/prometheus/client_golang (Worker.Handler,
// Metrics.Register). All methods are safe for concurrent use; the zero
// value is ready.
type Metrics struct {
	Started, Succeeded, Failed, Canceled, Reclaimed, Abandoned, LeaseLost atomic.Uint64
	// Suspects counts jobs this worker ran alone because their previous
	// worker died while running them (queue.Lease.Suspect).
	Suspects atomic.Uint64
	// QueueErrors counts failed calls to the queue (Redis unreachable…).
	QueueErrors atomic.Uint64
	Running     atomic.Int64

	once       sync.Once
	runDur     prometheus.Histogram
	modelDur   prometheus.Histogram
	tokens     *prometheus.CounterVec // kind: input, output
	cost       prometheus.Counter
	mcpCalls   *prometheus.CounterVec // server
	mcpErrors  *prometheus.CounterVec // server
	statusRuns *prometheus.HistogramVec
}

func (m *Metrics) init() {
	m.once.Do(func() {
		m.runDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "odek_worker_run_duration_seconds",
			Help: "Wall-clock duration of job runs.", Buckets: durationBuckets})
		m.statusRuns = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "odek_worker_job_duration_seconds",
			Help: "Wall-clock duration of jobs whose result was acknowledged here, by status.", Buckets: durationBuckets}, []string{"status"})
		m.modelDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "odek_worker_model_call_duration_seconds",
			Help: "Duration of model calls (one per iteration) of the jobs run here.", Buckets: modelBuckets})
		m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "odek_worker_tokens_total",
			Help: "Model tokens of the jobs whose result was acknowledged here, by kind (input, output, cached_input: the part of input the provider's prompt cache served)."}, []string{"kind"})
		m.cost = prometheus.NewCounter(prometheus.CounterOpts{Name: "odek_worker_cost_usd_total",
			Help: "Estimated model cost (USD, from the configured prices) of the jobs whose result was acknowledged here."})
		m.mcpCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "odek_worker_mcp_calls_total",
			Help: "Calls of MCP extension tools, by server."}, []string{"server"})
		m.mcpErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "odek_worker_mcp_call_errors_total",
			Help: "Failed calls of MCP extension tools, by server."}, []string{"server"})
	})
}

// ObserveRun records one finished run's wall-clock duration.
func (m *Metrics) ObserveRun(d time.Duration) {
	m.init()
	m.runDur.Observe(d.Seconds())
}

// observeResult records an acknowledged result: its duration by status,
// tokens and cost.
func (m *Metrics) observeResult(res queue.Result, d time.Duration) {
	m.init()
	m.statusRuns.WithLabelValues(string(res.Status)).Observe(d.Seconds())
	m.tokens.WithLabelValues("input").Add(float64(res.Usage.PromptTokens))
	m.tokens.WithLabelValues("output").Add(float64(res.Usage.CompletionTokens))
	m.tokens.WithLabelValues("cached_input").Add(float64(res.Usage.CachedTokens))
	if res.Usage.CostUSD > 0 {
		m.cost.Add(res.Usage.CostUSD)
	}
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
			m.modelDur.Observe(float64(ms) / 1000)
		}
	case events.ToolCallCompleted, events.ToolCallFailed:
		server, _, ok := strings.Cut(ev.Tool, "__")
		if !ok || server == "" {
			return
		}
		m.mcpCalls.WithLabelValues(server).Inc()
		if ev.Type == events.ToolCallFailed {
			m.mcpErrors.WithLabelValues(server).Inc()
		}
	}
}

// Register adds every worker metric to reg. dead, when non-nil, supplies
// the dead-letter and suspect counts of the queue value.
func (m *Metrics) Register(reg prometheus.Registerer, dead queue.DeadLetterCounter) error {
	m.init()
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	cs := []prometheus.Collector{
		counter("odek_worker_jobs_started_total", "Jobs this worker started running.", &m.Started),
		counter("odek_worker_jobs_succeeded_total", "Jobs finished with status succeeded.", &m.Succeeded),
		counter("odek_worker_jobs_failed_total", "Jobs finished with status failed.", &m.Failed),
		counter("odek_worker_jobs_canceled_total", "Jobs finished with status canceled.", &m.Canceled),
		counter("odek_worker_jobs_reclaimed_total", "Jobs started here after another worker's lease expired (attempt > 1).", &m.Reclaimed),
		counter("odek_worker_jobs_suspect_total", "Jobs run here alone because their previous worker died while running them.", &m.Suspects),
		counter("odek_worker_jobs_abandoned_total", "Jobs left unacknowledged for redelivery (shutdown, panic in the runner).", &m.Abandoned),
		counter("odek_worker_jobs_lease_lost_total", "Jobs whose lease another worker took over while they ran; their result was dropped.", &m.LeaseLost),
		counter("odek_worker_queue_errors_total", "Failed calls to the queue.", &m.QueueErrors),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "odek_worker_jobs_running", Help: "Jobs running in this worker now."},
			func() float64 { return float64(m.Running.Load()) }),
		m.runDur, m.statusRuns, m.modelDur, m.tokens, m.cost, m.mcpCalls, m.mcpErrors,
	}
	if dead != nil {
		cs = append(cs,
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "odek_worker_jobs_dead_lettered_total",
				Help: "Jobs this worker's claims moved to the dead-letter stream."}, func() float64 { return float64(dead.DeadLettered()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "odek_worker_jobs_suspected_total",
				Help: "Jobs this worker's expired-lease scans found abandoned and made suspects."}, func() float64 { return float64(dead.Suspected()) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// queueCollector reports the whole queue's state, asked at scrape time
// with a 1 s timeout; nothing is reported when the queue does not answer.
type queueCollector struct{ s statser }

var (
	descJobs     = prometheus.NewDesc("odek_queue_jobs", "Unfinished jobs in the queue by state: queued (all waiting, also behind a busy chat), ready (heads of their chat), suspect (waiting to run alone), running (held by a lease).", []string{"state"}, nil)
	descDepth    = prometheus.NewDesc("odek_queue_depth", "Jobs ready to run and not claimed.", nil, nil)
	descPending  = prometheus.NewDesc("odek_queue_pending", "Jobs claimed by some worker (running or with an expired lease).", nil, nil)
	descDead     = prometheus.NewDesc("odek_queue_dead_letters", "Jobs in the dead-letter stream.", nil, nil)
	descResults  = prometheus.NewDesc("odek_queue_results_pending", "Results not yet acknowledged by a front end.", nil, nil)
	descOldest   = prometheus.NewDesc("odek_queue_oldest_queued_age_seconds", "Age of the oldest queued job (0 when none).", nil, nil)
	descByWorker = prometheus.NewDesc("odek_queue_running_by_worker", "Leases held per worker name.", []string{"worker"}, nil)
)

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descDepth, descPending, descDead, descResults, descOldest, descByWorker} {
		ch <- d
	}
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := c.s.Stats(ctx)
	if err != nil {
		return
	}
	g := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	g(descJobs, st.Queued, "queued")
	g(descJobs, st.Ready, "ready")
	g(descJobs, st.Suspects, "suspect")
	g(descJobs, st.Running, "running")
	g(descDepth, st.Ready)
	g(descPending, st.Running)
	g(descDead, st.Dead)
	g(descResults, st.Results)
	var age float64
	if !st.OldestQueued.IsZero() {
		age = max(time.Since(st.OldestQueued).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, age)
	for w, n := range st.RunningBy {
		g(descByWorker, n, w)
	}
}

// statser is the part of queue.Operator the metrics need.
type statser interface {
	Stats(ctx context.Context) (queue.Stats, error)
}

// Handler serves GET /healthz (JSON: 200 with "status": "ok" while the
// worker is running and its last queue call succeeded, 503 with "status":
// "unhealthy" and the "reason" otherwise, plus Config.Health's fields) and GET
// /metrics (client_golang's exposition of Registry; queue gauges when the
// queue implements queue.Operator, asked with a 1 s timeout).
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
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.registry, promhttp.HandlerOpts{ErrorLog: promLog{w.log}}))
	return mux
}

// promLog carries promhttp's error lines into the worker's logger.
type promLog struct{ log logrus.FieldLogger }

func (l promLog) Println(v ...any) { l.log.Warn(append([]any{"worker: metrics: "}, v...)...) }

// Registry returns the worker's Prometheus registry (its metrics, the
// queue's gauges, and the Go and process collectors); a caller may add its
// own collectors to the same /metrics.
func (w *Worker) Registry() *prometheus.Registry { return w.registry }

func (w *Worker) newRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	dead, _ := w.cfg.Queue.(queue.DeadLetterCounter)
	if err := w.metrics.Register(reg, dead); err != nil {
		return nil, err
	}
	cs := []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	if s, ok := w.cfg.Queue.(statser); ok {
		cs = append(cs, queueCollector{s})
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
