package worker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/queue"
)

// durationBuckets are the upper bounds (seconds) of the run duration
// histogram.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics are the worker's counters, written in the Prometheus text format
// (version 0.0.4) by WritePrometheus. All methods are safe for concurrent
// use; the zero value is ready.
type Metrics struct {
	Started, Succeeded, Failed, Canceled, Reclaimed, Abandoned, LeaseLost atomic.Uint64
	// Suspects counts jobs this worker ran alone because their previous
	// worker died while running them (queue.Lease.Suspect).
	Suspects atomic.Uint64
	// QueueErrors counts failed calls to the queue (Redis unreachable…).
	QueueErrors atomic.Uint64
	Running     atomic.Int64

	mu      sync.Mutex
	buckets [16]uint64 // cumulative counts are computed when written
	count   uint64
	sum     float64
}

// ObserveRun records one finished run's wall-clock duration.
func (m *Metrics) ObserveRun(d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, b := range durationBuckets {
		if s <= b {
			m.buckets[i]++
			break
		}
	}
	m.count++
	m.sum += s
}

// Gauges are point-in-time values read when /metrics is scraped.
type Gauges struct {
	Stats        *queue.Stats // nil: the queue could not be asked
	DeadLettered uint64       // jobs this worker's claims dead-lettered
}

// WritePrometheus writes every metric in the Prometheus text format.
func (m *Metrics) WritePrometheus(w io.Writer, g Gauges) error {
	ew := &errWriter{w: w}
	counter := func(name, help string, v uint64) {
		fmt.Fprintf(ew, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge := func(name, help string, v int64) {
		fmt.Fprintf(ew, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
	}
	counter("odek_worker_jobs_started_total", "Jobs this worker started running.", m.Started.Load())
	counter("odek_worker_jobs_succeeded_total", "Jobs finished with status succeeded.", m.Succeeded.Load())
	counter("odek_worker_jobs_failed_total", "Jobs finished with status failed.", m.Failed.Load())
	counter("odek_worker_jobs_canceled_total", "Jobs finished with status canceled.", m.Canceled.Load())
	counter("odek_worker_jobs_reclaimed_total", "Jobs started here after another worker's lease expired (attempt > 1).", m.Reclaimed.Load())
	counter("odek_worker_jobs_suspect_total", "Jobs run here alone because their previous worker died while running them.", m.Suspects.Load())
	counter("odek_worker_jobs_dead_lettered_total", "Jobs this worker's claims moved to the dead-letter stream.", g.DeadLettered)
	counter("odek_worker_jobs_abandoned_total", "Jobs left unacknowledged for redelivery (shutdown, panic in the runner).", m.Abandoned.Load())
	counter("odek_worker_jobs_lease_lost_total", "Jobs whose lease another worker took over while they ran; their result was dropped.", m.LeaseLost.Load())
	counter("odek_worker_queue_errors_total", "Failed calls to the queue.", m.QueueErrors.Load())
	gauge("odek_worker_jobs_running", "Jobs running in this worker now.", m.Running.Load())

	m.mu.Lock()
	buckets, count, sum := m.buckets, m.count, m.sum
	m.mu.Unlock()
	const h = "odek_worker_run_duration_seconds"
	fmt.Fprintf(ew, "# HELP %s Wall-clock duration of job runs.\n# TYPE %s histogram\n", h, h)
	var cum uint64
	for i, b := range durationBuckets {
		cum += buckets[i]
		fmt.Fprintf(ew, "%s_bucket{le=\"%s\"} %d\n", h, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	fmt.Fprintf(ew, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", h, count, h, strconv.FormatFloat(sum, 'g', -1, 64), h, count)

	if s := g.Stats; s != nil {
		gauge("odek_queue_depth", "Jobs ready to run and not claimed.", s.Ready)
		gauge("odek_queue_pending", "Jobs claimed by some worker (running or with an expired lease).", s.Running)
		gauge("odek_queue_dead_letters", "Jobs in the dead-letter stream.", s.Dead)
		gauge("odek_queue_results_pending", "Results not yet acknowledged by a front end.", s.Results)
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// statser is the part of queue.Operator the metrics need.
type statser interface {
	Stats(ctx context.Context) (queue.Stats, error)
}

// Handler serves GET /healthz (200 "ok" while the worker is running and
// its last queue call succeeded, 503 with the reason otherwise) and GET
// /metrics (Prometheus text; queue gauges when the queue implements
// queue.Operator, asked with a 1 s timeout).
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if reason := w.unhealthy(); reason != "" {
			rw.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(rw, reason)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
	mux.HandleFunc("GET /metrics", func(rw http.ResponseWriter, r *http.Request) {
		var g Gauges
		if s, ok := w.cfg.Queue.(statser); ok {
			ctx, cancel := context.WithTimeout(r.Context(), time.Second)
			st, err := s.Stats(ctx)
			cancel()
			if err == nil {
				g.Stats = &st
			}
		}
		if d, ok := w.cfg.Queue.(queue.DeadLetterCounter); ok {
			g.DeadLettered = d.DeadLettered()
		}
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = w.metrics.WritePrometheus(rw, g)
	})
	return mux
}
