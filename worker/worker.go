// Package worker runs queued odek jobs: it claims jobs from a queue.Queue,
// holds their leases with heartbeats, runs each through an injected
// RunFunc (cmd/odek builds one around agent.Run with the operator's
// configuration), publishes the run's events and a compact summary to the
// job's progress stream, and acknowledges the job with its result.
//
// The worker does not know how a run is assembled: it hands the RunFunc the
// job, an events.Sink bound to the job's progress stream, a signal handler
// that turns the run's streamed answer (agent.SignalAnswerDelta, redacted
// by the run) into odek.delta/v1 entries on that stream, and an
// agent.Prompter that asks the job's chat over the queue (when the queue
// implements queue.Approvals). That keeps this package free of
// configuration and of the LLM client: everything it publishes is what
// the run gave off through agent's API.
//
// # Job outcomes
//
//   - The RunFunc returns: the result (or a failure built from its error)
//     is acknowledged, which publishes it exactly once.
//   - Cancel by id: the next heartbeat (every HeartbeatInterval, 500 ms by
//     default) returns queue.ErrCanceled; the run's context is canceled and
//     the job is acknowledged as canceled.
//   - Lease lost (another worker took the job over after a pause longer
//     than the lease): the run is canceled and its result dropped.
//   - Shutdown: no new claims; running jobs get ShutdownTimeout (or the
//     Shutdown context) to finish, then their contexts are canceled and they
//     are left unacknowledged, so another worker reruns them after the
//     lease.
//   - The RunFunc panics: the job is left unacknowledged exactly as if the
//     process had crashed (the panic is logged, the worker goes on), so the
//     queue's attempt counting dead-letters a job that keeps doing it.
//
// Queue calls that fail (Redis down) are retried with Backoff; a result is
// acknowledged as soon as the queue answers again, and the lease is kept
// alive meanwhile by the heartbeat, so an outage shorter than the lease
// neither loses nor duplicates a job.
//
// # Concurrency and ownership
//
// A Worker runs up to Concurrency jobs at once, each in its own goroutine,
// plus one claim loop and one progress publisher. Run may be called once;
// Shutdown may be called from any goroutine, more than once. The Worker
// does not own the queue or the logger it is given.
package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/backoff"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// Queue is what a worker needs of a queue.Queue.
type Queue interface {
	Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]queue.Lease, error)
	Heartbeat(ctx context.Context, l queue.Lease) error
	Ack(ctx context.Context, l queue.Lease, res queue.Result) error
	PublishProgress(ctx context.Context, jobID string, data []byte) error
}

// RunFunc runs one job. sink receives the run's events (pass it as
// agent.Config.EventSink); signals its agent signals (pass it as
// agent.Config.AgentSignalHandler: the answer's SignalAnswerStart and
// SignalAnswerDelta, already redacted by the run, become odek.delta/v1
// progress entries); approver asks the job's chat (pass it as
// agent.Config.Prompter; nil when the queue cannot carry approvals). ctx is
// canceled when the job is canceled, its lease is lost or the worker's
// shutdown timeout passes.
//
// The returned Result is acknowledged as is; the worker fills JobID,
// ChatID and Attempt, an empty Status (succeeded without error, failed
// with one) and a zero DurationMS. A non-nil error with an empty
// Result.Error puts err's text in the result: it reaches the chat, so the
// RunFunc must return redacted errors.
type RunFunc func(ctx context.Context, job queue.Job, sink events.Sink, signals func(agent.SignalEvent), approver agent.Prompter) (queue.Result, error)

// Config configures a Worker. Queue and Run are required; every other
// field works at its zero value.
type Config struct {
	// Queue is claimed from. If it implements queue.Approvals the RunFunc
	// gets an approver; queue.ProgressBatcher, queue.Operator and
	// queue.DeadLetterCounter are used for batching and metrics.
	Queue Queue
	// Run runs one job.
	Run RunFunc
	// Name is the consumer name in the queue, unique per worker process;
	// "" means "<hostname>-<pid>-<4 random hex>".
	Name string
	// Concurrency is the number of jobs run at once; 0 means 1.
	Concurrency int
	// ShutdownTimeout is how long Shutdown lets running jobs finish when
	// its context has no earlier deadline; 0 means 30 s.
	ShutdownTimeout time.Duration
	// HeartbeatInterval is the time between lease renewals and so the
	// latency of a cancellation; 0 means 500 ms. Keep it well under the
	// queue's LeaseTTL.
	HeartbeatInterval time.Duration
	// LeaseTTL is the queue's lease (queue.Options.LeaseTTL). A job whose
	// lease this worker could not renew for LeaseTTL minus one
	// HeartbeatInterval is cancelled and left unacknowledged: by then
	// another worker may have taken it over, and a job must not run twice
	// at once (a worker cut off from Redis while others reach it). 0 means
	// 30 s, the queue's default.
	LeaseTTL time.Duration
	// ClaimBlock is how long one Claim waits for a job; 0 means 250 ms.
	// It bounds how quickly Shutdown stops the claim loop.
	ClaimBlock time.Duration
	// ApprovalTimeout is how long an approval waits for the chat before
	// denying; 0 means queue.DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// RetryBase and RetryMax bound the backoff between failed queue calls;
	// 0 means 50 ms and 5 s.
	RetryBase, RetryMax time.Duration
	// AfterResult, when set, is called with each job whose result this
	// worker acknowledged (cmd/odek arms a failed one-shot schedule's
	// retry with it, schedule.RetryFailed). It must not block for long.
	AfterResult func(job queue.Job, res queue.Result)
	// Health, when set, adds fields to the /healthz JSON (the job
	// runner's sandbox state, say); the worker's own "status" and
	// "reason" win.
	Health func() map[string]any
	// Logger receives diagnostics with job_id fields; nil discards.
	Logger logrus.FieldLogger
	// Metrics collects counters; nil means a fresh Metrics (see
	// Worker.Metrics).
	Metrics *Metrics
	// Version is announced in the queue's worker registry (`odek queue
	// workers`) when the queue implements queue.Inspector.
	Version string
	// AnnounceInterval is how often the worker renews its registry entry
	// (which expires after three intervals); 0 means 2 s.
	AnnounceInterval time.Duration
}

// Errors.
var (
	ErrNoQueue        = errors.New("worker: Config.Queue is required")
	ErrNoRun          = errors.New("worker: Config.Run is required")
	ErrAlreadyStarted = errors.New("worker: Run called twice")
)

// Causes of a job context's cancellation.
var (
	errJobCanceled = errors.New("worker: job canceled by request")
	errLeaseLost   = errors.New("worker: lease lost to another worker")
	errShutdown    = errors.New("worker: shutdown timeout passed; job left for redelivery")
)

// Worker claims and runs jobs. Create it with New.
type Worker struct {
	cfg     Config
	log     logrus.FieldLogger
	metrics *Metrics
	extraMu sync.Mutex
	extra   []scalar // AddCounterFunc
	sched   scheduledStats
	pub     *publisher
	hb      *heartbeater

	started atomic.Bool
	// stopClaims ends the claim loop (Shutdown); stopJobs cancels running
	// jobs (shutdown timeout, or Run's ctx ending).
	stopCtx    context.Context
	stopClaims context.CancelFunc
	jobsCtx    context.Context
	stopJobs   context.CancelCauseFunc
	jobs       sync.WaitGroup
	finished   chan struct{} // closed when Run has returned

	healthMu sync.Mutex
	lastErr  error // last failed claim; nil after a success
	running  bool
}

// New validates cfg and returns a Worker.
func New(cfg Config) (*Worker, error) {
	if cfg.Queue == nil {
		return nil, ErrNoQueue
	}
	if cfg.Run == nil {
		return nil, ErrNoRun
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 500 * time.Millisecond
	}
	if cfg.ClaimBlock <= 0 {
		cfg.ClaimBlock = 250 * time.Millisecond
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = queue.DefaultApprovalTimeout
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 50 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 5 * time.Second
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.IntN(1<<16))
	}
	if cfg.Metrics == nil {
		cfg.Metrics = &Metrics{}
	}
	if cfg.AnnounceInterval <= 0 {
		cfg.AnnounceInterval = 2 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		l := logrus.New()
		l.SetOutput(discard{})
		log = l
	}
	w := &Worker{cfg: cfg, log: log.WithField("worker", cfg.Name), metrics: cfg.Metrics, finished: make(chan struct{})}
	w.pub = newPublisher(cfg.Queue, w.log, w.metrics)
	w.hb = newHeartbeater(w)
	w.stopCtx, w.stopClaims = context.WithCancel(context.Background())
	w.jobsCtx, w.stopJobs = context.WithCancelCause(context.Background())
	w.registerScheduled()
	return w, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Name returns the worker's consumer name.
func (w *Worker) Name() string { return w.cfg.Name }

// Metrics returns the worker's counters.
func (w *Worker) Metrics() *Metrics { return w.metrics }

// Run claims and runs jobs until Shutdown is called (it then returns once
// the running jobs are done or left for redelivery) or ctx ends (running
// jobs are canceled at once and left for redelivery). It returns nil after
// Shutdown, ctx.Err() otherwise.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	defer close(w.finished)
	w.setHealth(true, nil)
	defer w.setHealth(false, nil)
	stop := context.AfterFunc(ctx, func() {
		w.stopClaims()
		w.stopJobs(errShutdown)
	})
	defer stop()
	pubCtx, pubCancel := context.WithCancel(context.Background())
	go w.pub.run(pubCtx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); w.hb.run(pubCtx) }()
	if in, ok := w.cfg.Queue.(queue.Inspector); ok {
		annDone := make(chan struct{})
		go func() { defer close(annDone); w.announce(pubCtx, in) }()
		defer func() { <-annDone }()
	}

	w.claimLoop()
	w.log.WithField("running", w.metrics.Running.Load()).Info("worker: stopped claiming")
	w.jobs.Wait()
	close(w.pub.ch)
	<-w.pub.done
	pubCancel()
	<-hbDone
	w.stopJobs(nil)
	if w.stopCtx.Err() != nil && ctx.Err() == nil {
		return nil
	}
	return ctx.Err()
}

// Shutdown stops claiming, lets running jobs finish until ctx ends or
// ShutdownTimeout passes, then cancels them (they are left for
// redelivery), and waits for Run to return. It returns an error when jobs
// had to be canceled.
func (w *Worker) Shutdown(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.cfg.ShutdownTimeout)
		defer cancel()
	}
	w.stopClaims()
	if !w.started.Load() {
		return nil
	}
	// Wait for Run itself, not only for the jobs running now: a Claim in
	// flight when claiming stopped may still hand out jobs, and the
	// deadline must bound those too.
	select {
	case <-w.finished:
		return nil
	case <-ctx.Done():
		w.stopJobs(errShutdown)
		<-w.finished
		return fmt.Errorf("worker: shutdown: running jobs canceled and left for redelivery: %w", ctx.Err())
	}
}

// announce keeps the worker's entry in the queue's worker registry fresh
// until ctx ends, then removes it.
func (w *Worker) announce(ctx context.Context, in queue.Inspector) {
	host, _ := os.Hostname()
	info := queue.WorkerInfo{Name: w.cfg.Name, Version: w.cfg.Version, Host: host, PID: os.Getpid(),
		Concurrency: w.cfg.Concurrency, Started: time.Now().UTC()}
	t := time.NewTicker(w.cfg.AnnounceInterval)
	defer t.Stop()
	for {
		info.Running = w.metrics.Running.Load()
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		if err := in.RegisterWorker(cctx, info, 3*w.cfg.AnnounceInterval); err != nil && ctx.Err() == nil {
			w.log.WithError(err).Debug("worker: announcing itself failed")
		}
		cancel()
		select {
		case <-t.C:
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = in.UnregisterWorker(cctx, w.cfg.Name)
			cancel()
			return
		}
	}
}

func (w *Worker) setHealth(running bool, err error) {
	w.healthMu.Lock()
	w.running, w.lastErr = running, err
	w.healthMu.Unlock()
}

func (w *Worker) setErr(err error) {
	w.healthMu.Lock()
	w.lastErr = err
	w.healthMu.Unlock()
}

// unhealthy returns "" when healthy, else the reason.
func (w *Worker) unhealthy() string {
	w.healthMu.Lock()
	defer w.healthMu.Unlock()
	switch {
	case !w.running:
		return "not running"
	case w.lastErr != nil:
		return "queue unreachable: " + w.lastErr.Error()
	}
	return ""
}

// sleep waits d or until ctx ends; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx, d) == nil }

// claimLoop claims jobs into free slots until stopCtx ends. A suspect lease
// (queue.Lease.Suspect) stops claiming until that job ends. Claim itself
// runs under a context that is never canceled half way: a claim canceled
// after Redis handed out entries would leave them pending until their
// lease expired, costing them an attempt. ClaimBlock bounds each call.
func (w *Worker) claimLoop() {
	slots := make(chan struct{}, w.cfg.Concurrency)
	failures := 0
	var scanned [2]uint64
	for {
		select {
		case slots <- struct{}{}:
		case <-w.stopCtx.Done():
			return
		}
		free := 1
	more:
		for free < w.cfg.Concurrency {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break more
			}
		}
		if free < w.cfg.Concurrency && w.suspectStarving() {
			// A suspect has waited longer than a lease for an idle worker
			// (every worker stays busy under steady load): take no new job
			// until this one is idle, so the next claim can hand it over.
			w.log.WithField("running", w.cfg.Concurrency-free).Info("worker: a suspect job is waiting to run alone; draining to take it")
			for free < w.cfg.Concurrency {
				select {
				case slots <- struct{}{}:
					free++
				case <-w.stopCtx.Done():
					return
				}
			}
		}
		if w.stopCtx.Err() != nil {
			return
		}
		leases, err := w.cfg.Queue.Claim(context.Background(), w.cfg.Name, free, w.cfg.ClaimBlock)
		for range free - len(leases) {
			<-slots
		}
		var suspectDone chan struct{}
		for _, l := range leases {
			done := make(chan struct{})
			if l.Suspect {
				suspectDone = done
			}
			w.jobs.Add(1)
			go func() {
				defer func() { <-slots; close(done); w.jobs.Done() }()
				w.runJob(l)
			}()
		}
		if suspectDone != nil {
			// Its last worker died while running it: it runs alone, so a
			// death now is its own and no other job pays for it.
			select {
			case <-suspectDone:
			case <-w.stopCtx.Done():
				return
			}
		}
		if err != nil {
			failures++
			w.metrics.QueueErrors.Add(1)
			w.setErr(err)
			d := Backoff(failures, w.cfg.RetryBase, w.cfg.RetryMax, rand.Float64())
			w.log.WithError(err).WithField("retry_in", d).Warn("worker: claim failed")
			if !sleep(w.stopCtx, d) {
				return
			}
			continue
		}
		if failures > 0 {
			w.log.WithField("failures", failures).Info("worker: queue reachable again")
		}
		failures = 0
		w.logScan(&scanned)
		w.setErr(nil)
	}
}

// suspectStarving reports whether the queue says a suspect has waited for
// an idle worker longer than the lease.
func (w *Worker) suspectStarving() bool {
	sw, ok := w.cfg.Queue.(queue.SuspectWaiter)
	return ok && sw.SuspectWait() > w.cfg.LeaseTTL
}

// logScan logs what this worker's expired-lease scans did since the last
// call: jobs found abandoned (made suspects) and jobs dead-lettered.
func (w *Worker) logScan(last *[2]uint64) {
	dc, ok := w.cfg.Queue.(queue.DeadLetterCounter)
	if !ok {
		return
	}
	s, d := dc.Suspected(), dc.DeadLettered()
	if s > last[0] {
		w.log.WithField("jobs", s-last[0]).Info("worker: reclaim: found jobs whose worker died (lease expired); each will run alone")
	}
	if d > last[1] {
		w.log.WithField("jobs", d-last[1]).Warn("worker: reclaim: dead-lettered jobs whose worker died MaxAttempts times while they ran alone")
	}
	last[0], last[1] = s, d
}

// runJob runs one claimed job to its acknowledgement (or abandonment).
func (w *Worker) runJob(l queue.Lease) {
	log := w.log.WithFields(logrus.Fields{"job_id": l.Job.ID, "chat_id": l.Job.ChatID, "attempt": l.Job.Attempt})
	w.metrics.Started.Add(1)
	w.metrics.Running.Add(1)
	defer w.metrics.Running.Add(-1)
	if l.Job.Attempt > 1 {
		w.metrics.Reclaimed.Add(1)
	}
	if l.Suspect {
		w.metrics.Suspects.Add(1)
		log.WithField("suspect", true).Info("worker: job reclaimed after its last worker died; running it alone")
	} else {
		log.Info("worker: job claimed")
	}
	runCtx, cancelRun := context.WithCancelCause(w.jobsCtx)
	defer cancelRun(nil)
	// telemetry (issue 24): the job's spans continue the trace the front end
	// put in the job (tracing.go); no-ops while tracing is off.
	runCtx, jobSpan, claimSpan := w.traceJob(runCtx, l)
	defer jobSpan.End()
	if f := telemetry.LogFields(runCtx); f != nil {
		log = log.WithFields(f)
	}
	// The worker's one heartbeat loop renews the lease until runJob
	// returns (also while the ack is retried).
	defer w.hb.add(l, cancelRun, log)()

	start := time.Now()
	sink := newJobSink(w.pub, l.Job, start)
	sink.m = w.metrics
	var prompter agent.Prompter
	if a, ok := w.cfg.Queue.(queue.Approvals); ok {
		prompter = &approver{a: a, job: l.Job, timeout: w.cfg.ApprovalTimeout, now: time.Now}
	}
	deltas := newDeltaSink(sink) // delta.go: the answer as it streams
	claimSpan.End()
	runSpanCtx, runSpan := telemetry.Start(runCtx, "odek.job.run")
	runSpanCtx = withSteer(runSpanCtx, w.cfg.Queue, l.Job.ID, log) // steer.go
	// A schedule's fire runs by the rules of scheduled.go.
	res, scheduled, panicked, err := w.runScheduled(runSpanCtx, l.Job, telemetry.EventSpans(runSpanCtx, sink), deltas.signal)
	if !scheduled {
		res, panicked, err = w.call(runSpanCtx, l.Job, telemetry.EventSpans(runSpanCtx, sink), deltas.signal, prompter)
	}
	runSpan.End()
	deltas.stop()
	dur := time.Since(start)
	cause := context.Cause(runCtx)
	w.metrics.ObserveRun(dur)
	// The job's progress goes out before its result.
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), 5*time.Second)
	w.pub.flush(flushCtx)
	cancelFlush()

	switch {
	case panicked != nil:
		jobSpan.Fail("panic", nil)
		w.metrics.Abandoned.Add(1)
		log.WithField("panic", fmt.Sprint(panicked)).WithField("stack", string(debug.Stack())).
			Error("worker: run panicked; job left unacknowledged so the queue retries it and dead-letters it after its attempts")
		return
	case errors.Is(cause, errLeaseLost):
		jobSpan.Fail("lease_lost", nil)
		w.metrics.LeaseLost.Add(1)
		log.Warn("worker: lease lost while running; result dropped")
		return
	case errors.Is(cause, errShutdown):
		jobSpan.Fail("shutdown", nil)
		w.metrics.Abandoned.Add(1)
		log.Warn("worker: shutdown timeout; job left for redelivery")
		return
	}
	res = decideResult(res, err, errors.Is(cause, errJobCanceled), dur)
	// Count the outcome only once the queue took the result: a dropped one
	// (lease lost, left for redelivery) is counted as such by ack, and the
	// worker that finishes the job counts its outcome.
	_, ackSpan := telemetry.Start(runCtx, "odek.job.ack")
	status := w.ack(l, res, log)
	ackSpan.End()
	traceResult(jobSpan, status, res)
	defer func() {
		if status != "" {
			log.WithFields(logrus.Fields{"status": status, "duration_ms": dur.Milliseconds(),
				"prompt_tokens": res.Usage.PromptTokens, "completion_tokens": res.Usage.CompletionTokens}).Info("worker: job finished")
		}
	}()
	if status != "" {
		res.Status = status
		w.metrics.observeResult(res, dur)
		if w.cfg.AfterResult != nil {
			w.cfg.AfterResult(l.Job, res)
		}
	}
	switch status {
	case queue.StatusSucceeded:
		w.metrics.Succeeded.Add(1)
	case queue.StatusCanceled:
		w.metrics.Canceled.Add(1)
	case "":
	default:
		w.metrics.Failed.Add(1)
	}
}

// decideResult completes a RunFunc's result: status from the error and
// the cancellation, the error text, the duration. Pure, table-tested.
func decideResult(res queue.Result, err error, canceled bool, dur time.Duration) queue.Result {
	switch {
	case canceled:
		res.Status = queue.StatusCanceled
	case res.Status == "" && err != nil:
		res.Status = queue.StatusFailed
	case res.Status == "":
		res.Status = queue.StatusSucceeded
	}
	if err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	if canceled && res.Error == "" {
		res.Error = "canceled by request"
	}
	if res.DurationMS == 0 {
		res.DurationMS = dur.Milliseconds()
	}
	return res
}

// call runs the RunFunc, turning a panic into panicked.
func (w *Worker) call(ctx context.Context, job queue.Job, sink events.Sink, signals func(agent.SignalEvent), p agent.Prompter) (res queue.Result, panicked any, err error) {
	defer func() {
		if v := recover(); v != nil {
			panicked = v
		}
	}()
	res, err = w.cfg.Run(ctx, job, sink, signals, p)
	return res, nil, err
}

// leaseExpired reports whether a lease last renewed since ago may already
// belong to another worker: one heartbeat interval of margin before ttl,
// since the next attempt would come too late. Pure.
func leaseExpired(since, ttl, interval time.Duration) bool {
	return since >= ttl-interval
}

// ack publishes res, retrying with backoff while the queue is unreachable,
// until it succeeds, the lease is lost, or the worker's jobs are stopped.
// It returns the status of the result published ("" when none was: the
// job was lost or left for redelivery).
func (w *Worker) ack(l queue.Lease, res queue.Result, log logrus.FieldLogger) queue.Status {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := w.cfg.Queue.Ack(ctx, l, res)
		cancel()
		switch {
		case err == nil:
			return res.Status
		case errors.Is(err, queue.ErrLeaseLost):
			w.metrics.LeaseLost.Add(1)
			log.Warn("worker: lease lost before the result was acknowledged; result dropped")
			return ""
		case errors.Is(err, queue.ErrPayloadTooLarge):
			log.WithError(err).Warn("worker: result too large; acknowledging a short failure instead")
			res = queue.Result{Status: queue.StatusFailed, Error: err.Error(), DurationMS: res.DurationMS, Usage: res.Usage, ExitCode: agent.ExitError}
			continue
		}
		w.metrics.QueueErrors.Add(1)
		d := Backoff(attempt, w.cfg.RetryBase, w.cfg.RetryMax, rand.Float64())
		log.WithError(err).WithField("retry_in", d).Warn("worker: ack failed")
		if !sleep(w.jobsCtx, d) {
			w.metrics.Abandoned.Add(1)
			log.Warn("worker: stopped before the result was acknowledged; job left for redelivery")
			return ""
		}
	}
}
