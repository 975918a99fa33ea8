package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/odekrun/odek/worker"
)

// start runs a worker on q until the test ends.
func start(t *testing.T, cfg worker.Config) *worker.Worker {
	t.Helper()
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("Run = %v after Shutdown, want nil", err)
		}
	})
	return w
}

var (
	seenMu sync.Mutex
	seen   = map[queue.Queue]map[string]queue.Result{}
)

// waitResult reads (and acknowledges) results until the one for jobID
// arrives or 10 s pass; results of other jobs are kept for later calls.
func waitResult(t *testing.T, q queue.Queue, jobID string) queue.Result {
	t.Helper()
	seenMu.Lock()
	defer seenMu.Unlock()
	if seen[q] == nil {
		seen[q] = map[string]queue.Result{}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r, ok := seen[q][jobID]; ok {
			return r
		}
		ds, err := q.ReadResults(context.Background(), "fe", 10, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if err := q.AckResult(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if _, dup := seen[q][d.Result.JobID]; dup {
				t.Fatalf("second result for job %s: %+v", d.Result.JobID, d.Result)
			}
			seen[q][d.Result.JobID] = d.Result
		}
	}
	t.Fatalf("no result for job %s within 10s", jobID)
	return queue.Result{}
}

func enqueue(t *testing.T, q queue.Queue, j queue.Job) queue.Job {
	t.Helper()
	got, _, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// agentRun is a RunFunc around the real agent loop against llmURL.
func agentRun(llmURL string) worker.RunFunc {
	return func(ctx context.Context, job queue.Job, sink events.Sink, signals func(agent.SignalEvent), p tools.Prompter) (queue.Result, error) {
		res, err := agent.Run(ctx, agent.Config{LLM: mustClient(llmURL), Model: "test-model", EventSink: sink, AgentSignalHandler: signals, Prompter: p}, job.Goal)
		return queue.Result{Answer: res.Answer, Usage: queue.Usage{PromptTokens: int64(res.Usage.PromptTokens), CompletionTokens: int64(res.Usage.CompletionTokens)}}, err
	}
}

func TestRealAgentJobPublishesEventsSummaryAndResult(t *testing.T) {
	for _, impl := range []string{"memory", "redis"} {
		t.Run(impl, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply("forty-two"))
			q := newQueue(t, impl, queue.Options{})
			start(t, worker.Config{Queue: q, Run: agentRun(srv.URL)})
			j := enqueue(t, q, queue.Job{ChatID: 7, Goal: "what is the answer?"})
			res := waitResult(t, q, j.ID)
			if res.Status != queue.StatusSucceeded || res.Answer != "forty-two" || res.Attempt != 1 || res.Usage.CompletionTokens == 0 {
				t.Fatalf("result %+v", res)
			}
			ps, err := q.ReadProgress(context.Background(), j.ID, "", 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			var last queue.ProgressSummary
			var streamed strings.Builder
			for _, p := range ps {
				var probe struct {
					Schema string `json:"schema"`
					Type   string `json:"type"`
				}
				if err := json.Unmarshal(p.Data, &probe); err != nil {
					t.Fatalf("progress entry is not JSON: %q", p.Data)
				}
				switch probe.Schema {
				case events.Schema:
					types = append(types, probe.Type)
				case queue.SummarySchema:
					_ = json.Unmarshal(p.Data, &last)
				case queue.DeltaSchema: // the answer as it streamed (worker/delta.go)
					var d queue.AnswerDelta
					if err := json.Unmarshal(p.Data, &d); err != nil || d.Call != 1 || d.Offset != streamed.Len() || d.JobID != j.ID {
						t.Fatalf("delta entry %q", p.Data)
					}
					streamed.WriteString(d.Text)
				default:
					t.Fatalf("unknown progress entry %q", p.Data)
				}
			}
			if streamed.String() != "forty-two" {
				t.Fatalf("streamed answer %q, want the answer", streamed.String())
			}
			if strings.Join(types, ",") != "run_started,iteration_completed,run_completed" {
				t.Fatalf("event types %v", types)
			}
			if last.State != "finished" || last.Outcome != "run_completed" || last.Iteration != 1 || last.JobID != j.ID {
				t.Fatalf("last summary %+v", last)
			}
		})
	}
}

func newQueue(t *testing.T, impl string, o queue.Options) queue.Queue {
	t.Helper()
	if impl == "memory" {
		return queue.NewMemory(o)
	}
	q, err := queue.NewRedis(context.Background(), queuetest.StartRedis(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// blockUntilCanceled is a RunFunc that signals started and waits for ctx.
func blockUntilCanceled(started chan<- string) worker.RunFunc {
	return func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
		started <- job.ID
		<-ctx.Done()
		return queue.Result{Answer: "partial"}, ctx.Err()
	}
}

func TestCancelRunningJob(t *testing.T) {
	for _, impl := range []string{"memory", "redis"} {
		t.Run(impl, func(t *testing.T) {
			q := newQueue(t, impl, queue.Options{})
			started := make(chan string, 1)
			w := start(t, worker.Config{Queue: q, Run: blockUntilCanceled(started)})
			j := enqueue(t, q, queue.Job{ChatID: 1, Goal: "long"})
			<-started
			t0 := time.Now()
			if err := q.Cancel(context.Background(), j.ID); err != nil {
				t.Fatal(err)
			}
			res := waitResult(t, q, j.ID)
			t.Logf("cancel to result: %v", time.Since(t0))
			if res.Status != queue.StatusCanceled || res.Answer != "partial" {
				t.Fatalf("result %+v, want canceled with the partial answer", res)
			}
			// The counter follows the acknowledgement, which the result
			// may overtake.
			for deadline := time.Now().Add(5 * time.Second); w.Metrics().Canceled.Load() != 1; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("canceled counter %d", w.Metrics().Canceled.Load())
				}
			}
		})
	}
}

// A RunFunc that panics leaves the job unacknowledged, as a crash would;
// the job becomes a suspect, runs alone, and after MaxAttempts deaths
// alone (MaxAttempts+1 claims) the queue dead-letters it; the chat's next
// job runs.
func TestPanickingRunIsDeadLetteredAfterMaxAttempts(t *testing.T) {
	for _, impl := range []string{"memory", "redis"} {
		t.Run(impl, func(t *testing.T) {
			q := newQueue(t, impl, queue.Options{LeaseTTL: 150 * time.Millisecond, MaxAttempts: 2})
			var calls atomic.Int32
			w := start(t, worker.Config{Queue: q, HeartbeatInterval: 20 * time.Millisecond,
				Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
					if job.Goal == "poison" {
						calls.Add(1)
						panic("boom")
					}
					return queue.Result{Answer: "fine"}, nil
				}})
			poison := enqueue(t, q, queue.Job{ChatID: 3, Goal: "poison"})
			next := enqueue(t, q, queue.Job{ChatID: 3, Goal: "after"})
			res := waitResult(t, q, poison.ID)
			if res.Status != queue.StatusDeadLettered || res.Attempt != 3 {
				t.Fatalf("poison result %+v, want dead_lettered at attempt 3", res)
			}
			if got := waitResult(t, q, next.ID); got.Status != queue.StatusSucceeded || got.Answer != "fine" {
				t.Fatalf("next job %+v", got)
			}
			if calls.Load() != 3 || w.Metrics().Abandoned.Load() != 3 || w.Metrics().Reclaimed.Load() != 2 || w.Metrics().Suspects.Load() != 2 {
				t.Fatalf("calls %d abandoned %d reclaimed %d", calls.Load(), w.Metrics().Abandoned.Load(), w.Metrics().Reclaimed.Load())
			}
			if d, _ := q.(queue.Operator).DeadLetters(context.Background(), 0); len(d) != 1 || d[0].ID != poison.ID {
				t.Fatalf("dead letters %+v", d)
			}
			if n := q.(queue.DeadLetterCounter).DeadLettered(); n != 1 {
				t.Fatalf("dead-lettered counter %d", n)
			}
			if n := q.(queue.DeadLetterCounter).Suspected(); n != 2 {
				t.Fatalf("suspected counter %d, want 2 (every death but the last made it a suspect)", n)
			}
		})
	}
}

func TestShutdownLetsRunningJobFinish(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	started, release := make(chan string, 1), make(chan struct{})
	w, _ := worker.New(worker.Config{Queue: q, Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
		started <- job.ID
		<-release
		return queue.Result{Answer: "drained"}, nil
	}})
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(context.Background()) }()
	j := enqueue(t, q, queue.Job{ChatID: 1, Goal: "x"})
	<-started
	shutDone := make(chan error, 1)
	go func() { shutDone <- w.Shutdown(context.Background()) }()
	select {
	case err := <-shutDone:
		t.Fatalf("Shutdown returned %v while a job was running", err)
	case <-time.After(100 * time.Millisecond): // Shutdown must still be waiting
	}
	close(release)
	if err := <-shutDone; err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	if err := <-runDone; err != nil {
		t.Fatalf("Run = %v", err)
	}
	// The claim loop has stopped: a new job stays ready.
	j2 := enqueue(t, q, queue.Job{ChatID: 2, Goal: "y"})
	if res := waitResult(t, q, j.ID); res.Answer != "drained" {
		t.Fatalf("result %+v", res)
	}
	st, _ := q.Stats(context.Background())
	if st.Ready != 1 || st.Running != 0 {
		t.Fatalf("stats after shutdown %+v; job %s should still be ready", st, j2.ID)
	}
}

func TestShutdownTimeoutLeavesJobForRedelivery(t *testing.T) {
	q := queue.NewMemory(queue.Options{LeaseTTL: 100 * time.Millisecond})
	started := make(chan string, 2)
	w, _ := worker.New(worker.Config{Queue: q, Run: blockUntilCanceled(started)})
	go func() { _ = w.Run(context.Background()) }()
	j := enqueue(t, q, queue.Job{ChatID: 1, Goal: "stuck"})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown = nil, want an error naming the canceled jobs")
	}
	if w.Metrics().Abandoned.Load() != 1 || w.Metrics().Canceled.Load() != 0 {
		t.Fatalf("abandoned %d canceled %d", w.Metrics().Abandoned.Load(), w.Metrics().Canceled.Load())
	}
	// A second worker gets it after the lease, as attempt 2.
	var attempt atomic.Int32
	start(t, worker.Config{Queue: q, Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
		attempt.Store(int32(job.Attempt))
		return queue.Result{Answer: "again"}, nil
	}})
	if res := waitResult(t, q, j.ID); res.Answer != "again" || attempt.Load() != 2 {
		t.Fatalf("redelivered result %+v attempt %d", res, attempt.Load())
	}
}

func TestApprovalOverQueue(t *testing.T) {
	for _, impl := range []string{"memory", "redis"} {
		t.Run(impl, func(t *testing.T) {
			q := newQueue(t, impl, queue.Options{})
			start(t, worker.Config{Queue: q, ApprovalTimeout: 300 * time.Millisecond,
				Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), p tools.Prompter) (queue.Result, error) {
					ok, err := p.Confirm(ctx, "allow "+job.Goal+"?")
					if errors.Is(err, agent.ErrNoAnswer) {
						return queue.Result{Answer: "denied: " + err.Error()}, nil // expired: Authorize denies, naming it
					}
					if err != nil {
						return queue.Result{}, err
					}
					return queue.Result{Answer: map[bool]string{true: "allowed", false: "denied"}[ok]}, nil
				}})
			a := q.(queue.Approvals)
			j := enqueue(t, q, queue.Job{ChatID: 9, Goal: "deploy"})
			var asked []queue.Approval
			for deadline := time.Now().Add(5 * time.Second); len(asked) == 0 && time.Now().Before(deadline); {
				asked, _ = a.ReadApprovals(context.Background(), "fe", 1, 100*time.Millisecond)
			}
			if len(asked) != 1 || asked[0].JobID != j.ID || asked[0].ChatID != 9 || asked[0].Question != "allow deploy?" {
				t.Fatalf("asked %+v", asked)
			}
			if err := a.Answer(context.Background(), asked[0].ID, true); err != nil {
				t.Fatal(err)
			}
			if res := waitResult(t, q, j.ID); res.Answer != "allowed" {
				t.Fatalf("result %+v", res)
			}
			// Nobody answers: denied after the timeout.
			j2 := enqueue(t, q, queue.Job{ChatID: 9, Goal: "rm"})
			if res := waitResult(t, q, j2.ID); res.Answer != "denied: the approval prompt expired without an answer (after 300ms)" || res.Status != queue.StatusSucceeded {
				t.Fatalf("unanswered result %+v", res)
			}
		})
	}
}

// Redis goes away while the worker is idle: /healthz turns 503, and after
// the restart (AOF) the job enqueued before the outage completes once.
func TestRedisOutageReconnects(t *testing.T) {
	srv := queuetest.StartServer(t, queuetest.ServerOptions{AOF: true})
	q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	w := start(t, worker.Config{Queue: q, RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
			runs.Add(1)
			return queue.Result{Answer: "ok"}, nil
		}})
	hs := httptest.NewServer(w.Handler())
	defer hs.Close()
	waitStatus(t, hs.URL+"/healthz", 200)
	port := srv.Addr
	srv.Kill()
	waitStatus(t, hs.URL+"/healthz", 503)
	srv.Restart()
	if srv.Addr != port {
		t.Fatalf("restarted on %s, want %s", srv.Addr, port)
	}
	j := enqueue(t, q, queue.Job{ChatID: 4, Goal: "after outage"})
	if res := waitResult(t, q, j.ID); res.Answer != "ok" {
		t.Fatalf("result %+v", res)
	}
	waitStatus(t, hs.URL+"/healthz", 200)
	if runs.Load() != 1 {
		t.Fatalf("runs %d, want 1", runs.Load())
	}
	if w.Metrics().QueueErrors.Load() == 0 {
		t.Fatal("queue errors not counted during the outage")
	}
}

func waitStatus(t *testing.T, url string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := 0
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			last = resp.StatusCode
			resp.Body.Close()
			if last == want {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	t.Fatalf("%s: status %d, want %d within 10s", url, last, want)
}

func TestMetricsEndpoint(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	w := start(t, worker.Config{Queue: q, Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
		if job.Goal == "fail" {
			return queue.Result{}, errors.New("model said no")
		}
		return queue.Result{Answer: "ok"}, nil
	}})
	a := enqueue(t, q, queue.Job{ChatID: 1, Goal: "ok"})
	b := enqueue(t, q, queue.Job{ChatID: 2, Goal: "fail"})
	waitResult(t, q, a.ID)
	if res := waitResult(t, q, b.ID); res.Status != queue.StatusFailed || res.Error != "model said no" {
		t.Fatalf("failed result %+v", res)
	}
	enqueue(t, q, queue.Job{ChatID: 3, Goal: "ok"}) // stays ready? no: the worker runs it; depth is 0 or 1
	hs := httptest.NewServer(w.Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", ct)
	}
	for _, want := range []string{
		"odek_worker_jobs_succeeded_total ", "odek_worker_jobs_failed_total 1\n",
		"odek_worker_run_duration_seconds_bucket{le=\"+Inf\"} ", "odek_worker_run_duration_seconds_count ",
		"# TYPE odek_worker_run_duration_seconds histogram\n", "odek_queue_depth ", "odek_queue_pending ",
		"odek_worker_jobs_dead_lettered_total 0\n", "odek_worker_jobs_running ",
		`odek_queue_jobs{state="queued"} `, `odek_queue_jobs{state="suspect"} 0`, "odek_queue_oldest_queued_age_seconds ",
		"go_goroutines ", `odek_worker_job_duration_seconds_count{status="failed"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestNewRequiresQueueAndRun(t *testing.T) {
	if _, err := worker.New(worker.Config{}); !errors.Is(err, worker.ErrNoQueue) {
		t.Fatalf("New without queue = %v", err)
	}
	if _, err := worker.New(worker.Config{Queue: queue.NewMemory(queue.Options{})}); !errors.Is(err, worker.ErrNoRun) {
		t.Fatalf("New without run = %v", err)
	}
}

func mustClient(url string) agent.Model {
	c, err := llm.New(llm.Config{BaseURL: url, APIKey: "sk-test"})
	if err != nil {
		panic(err)
	}
	return c
}

// slowClaimQueue hands out one lease from a Claim that is already in flight
// when Shutdown starts: Claim blocks until release is closed.
type slowClaimQueue struct {
	queue.Queue
	inClaim chan struct{} // closed when the first Claim is waiting
	release chan struct{}
	once    sync.Once
	lease   queue.Lease
}

func (q *slowClaimQueue) Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]queue.Lease, error) {
	first := false
	q.once.Do(func() { first = true })
	if !first {
		return nil, nil
	}
	close(q.inClaim)
	<-q.release
	return []queue.Lease{q.lease}, nil
}

// A job handed out by the Claim that was in flight when Shutdown began must
// still be bounded by the shutdown timeout: Shutdown cancels it and returns,
// instead of waiting for it without limit.
func TestShutdownTimeoutCoversJobFromInFlightClaim(t *testing.T) {
	mem := queue.NewMemory(queue.Options{})
	enqueue(t, mem, queue.Job{ChatID: 1, Goal: "late"})
	leases, err := mem.Claim(context.Background(), "setup", 1, 0)
	if err != nil || len(leases) != 1 {
		t.Fatalf("setup claim = %v, %v", leases, err)
	}
	q := &slowClaimQueue{Queue: mem, inClaim: make(chan struct{}), release: make(chan struct{}), lease: leases[0]}
	started := make(chan string, 1)
	w, err := worker.New(worker.Config{Queue: q, Run: blockUntilCanceled(started)})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(context.Background()) }()
	<-q.inClaim

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	shutDone := make(chan error, 1)
	go func() { shutDone <- w.Shutdown(ctx) }()
	// The claim returns only after Shutdown's context ended: whatever
	// Shutdown does, the job it hands out must be canceled.
	<-ctx.Done()
	close(q.release)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("claimed job never started")
	}
	select {
	case err := <-shutDone:
		if err == nil {
			t.Error("Shutdown = nil, want an error saying the running job was canceled")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return although its context ended: the job from the in-flight claim is not bounded by the shutdown timeout")
	}
	if err := <-runDone; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// lostAckQueue reports every Ack as too late: the lease went to another worker.
type lostAckQueue struct{ queue.Queue }

func (lostAckQueue) Ack(context.Context, queue.Lease, queue.Result) error { return queue.ErrLeaseLost }

// A result the queue refused (lease lost) is not counted as a finished
// job: the worker that took the job over counts it when it finishes.
func TestLostAckCountsAsLeaseLostOnly(t *testing.T) {
	mem := queue.NewMemory(queue.Options{})
	ran := make(chan struct{}, 1)
	w := start(t, worker.Config{Queue: lostAckQueue{mem}, Run: func(context.Context, queue.Job, events.Sink, func(agent.SignalEvent), tools.Prompter) (queue.Result, error) {
		ran <- struct{}{}
		return queue.Result{Answer: "late"}, nil
	}})
	enqueue(t, mem, queue.Job{ChatID: 1, Goal: "x"})
	<-ran
	m := w.Metrics()
	deadline := time.Now().Add(10 * time.Second)
	for m.LeaseLost.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	if m.LeaseLost.Load() != 1 {
		t.Fatalf("LeaseLost = %d, want 1", m.LeaseLost.Load())
	}
	if s, f := m.Succeeded.Load(), m.Failed.Load(); s != 0 || f != 0 {
		t.Fatalf("Succeeded = %d, Failed = %d for a dropped result, want 0 and 0", s, f)
	}
}

// cutOffQueue is a worker cut off from Redis while the job runs: every
// heartbeat fails with a network error, and Ack is recorded.
type cutOffQueue struct {
	queue.Queue
	acks atomic.Int32
}

func (*cutOffQueue) Heartbeat(context.Context, queue.Lease) error {
	return errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

func (q *cutOffQueue) Ack(ctx context.Context, l queue.Lease, r queue.Result) error {
	q.acks.Add(1)
	return q.Queue.Ack(ctx, l, r)
}

// A worker that cannot renew its lease stops the run once the lease may
// have passed to another worker, and publishes nothing: the job must not
// run twice at once.
func TestUnrenewableLeaseStopsTheRun(t *testing.T) {
	mem := queue.NewMemory(queue.Options{LeaseTTL: 300 * time.Millisecond})
	q := &cutOffQueue{Queue: mem}
	stopped := make(chan error, 1)
	w := start(t, worker.Config{Queue: q, LeaseTTL: 300 * time.Millisecond, HeartbeatInterval: 20 * time.Millisecond,
		Run: func(ctx context.Context, _ queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
			<-ctx.Done() // a long run; only the worker can end it
			stopped <- context.Cause(ctx)
			return queue.Result{Answer: "too late"}, ctx.Err()
		}})
	enqueue(t, mem, queue.Job{ChatID: 1, Goal: "long"})
	select {
	case cause := <-stopped:
		if cause == nil || !strings.Contains(cause.Error(), "lease") {
			t.Fatalf("run stopped with cause %v, want the lost lease", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run went on although its lease could not be renewed")
	}
	m := w.Metrics()
	deadline := time.Now().Add(10 * time.Second)
	for m.LeaseLost.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	if m.LeaseLost.Load() != 1 || q.acks.Load() != 0 {
		t.Fatalf("LeaseLost = %d, acks = %d; want 1 and 0", m.LeaseLost.Load(), q.acks.Load())
	}
}

func TestLeaseExpired(t *testing.T) {
	for _, tc := range []struct {
		since, ttl, interval time.Duration
		want                 bool
	}{
		{0, 30 * time.Second, 500 * time.Millisecond, false},
		{29 * time.Second, 30 * time.Second, 500 * time.Millisecond, false},
		{29500 * time.Millisecond, 30 * time.Second, 500 * time.Millisecond, true},
		{time.Minute, 30 * time.Second, 500 * time.Millisecond, true},
	} {
		if got := worker.LeaseExpired(tc.since, tc.ttl, tc.interval); got != tc.want {
			t.Errorf("LeaseExpired(%v, %v, %v) = %v, want %v", tc.since, tc.ttl, tc.interval, got, tc.want)
		}
	}
}

// A worker that is never idle under a steady backlog still runs a suspect:
// once the suspect has waited longer than a lease, the worker stops taking
// new jobs until it is idle, and its next claim gets the suspect alone.
// Every backlog job works 15 ms and then runs until the next one has
// started (or 150 ms), so without the drain the worker is never idle while
// the backlog lasts (~2 s).
func TestBusyWorkerDrainsForAStarvingSuspect(t *testing.T) {
	for _, impl := range []string{"memory", "redis"} {
		t.Run(impl, func(t *testing.T) {
			q := newQueue(t, impl, queue.Options{LeaseTTL: 200 * time.Millisecond})
			s := enqueue(t, q, queue.Job{ChatID: 1, Goal: "suspect"})
			if ls, err := q.Claim(context.Background(), "ghost", 1, time.Second); err != nil || len(ls) != 1 {
				t.Fatalf("ghost claim = %d, %v", len(ls), err) // the ghost never beats: its lease expires
			}
			const backlog = 150
			for i := 0; i < backlog; i++ {
				enqueue(t, q, queue.Job{ChatID: int64(100 + i), Goal: "work"})
			}
			var (
				mu    sync.Mutex
				order []string
				succ  = make(chan struct{}) // closed when the next job starts
			)
			start(t, worker.Config{Queue: q, Concurrency: 2, LeaseTTL: 200 * time.Millisecond, HeartbeatInterval: 20 * time.Millisecond,
				Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ tools.Prompter) (queue.Result, error) {
					mu.Lock()
					order = append(order, job.Goal)
					close(succ)
					mine := make(chan struct{})
					succ = mine
					mu.Unlock()
					if job.Goal == "work" {
						time.Sleep(15 * time.Millisecond) // the job's own work
						t := time.NewTimer(150 * time.Millisecond)
						defer t.Stop()
						select {
						case <-mine:
						case <-t.C:
						}
					}
					return queue.Result{Answer: job.Goal}, nil
				}})
			if res := waitResult(t, q, s.ID); res.Status != queue.StatusSucceeded || res.Attempt != 2 {
				t.Fatalf("suspect result %+v", res)
			}
			mu.Lock()
			defer mu.Unlock()
			before := 0
			for _, g := range order {
				if g == "suspect" {
					break
				}
				before++
			}
			if before >= backlog {
				t.Fatalf("the suspect ran after the whole backlog (%d jobs): it starved", before)
			}
			t.Logf("suspect ran after %d of %d backlog jobs", before, backlog)
		})
	}
}
