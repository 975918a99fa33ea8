package queuetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// NewQueue builds a fresh, empty queue with the given options for one subtest.
type NewQueue func(t *testing.T, o queue.Options) queue.Queue

// Run is the conformance suite: every queue.Queue implementation must pass it.
//
// The subtests run in parallel (t.Parallel): most of the suite's time is
// spent waiting on leases, timers and servers, not computing. Each subtest
// calls newQueue for a queue of its own, so newQueue must be safe to call
// from several goroutines at once and must give every call a queue that
// shares no state with the others (a fresh store, file or key prefix).
func Run(t *testing.T, newQueue NewQueue) {
	for _, c := range []struct {
		name string
		f    func(t *testing.T, nq NewQueue)
	}{
		{"EnqueueClaimAck", testEnqueueClaimAck},
		{"IdempotencyKey", testIdempotency},
		{"PayloadCap", testPayloadCap},
		{"InvalidJob", testInvalid},
		{"LeaseExpiryReclaim", testReclaim},
		{"DeadLetter", testDeadLetter},
		{"OtherChatsNotBlocked", testOtherChats},
		{"PerChatOrder", testPerChatOrder},
		{"CancelWaiting", testCancelWaiting},
		{"CancelReady", testCancelReady},
		{"CancelRunning", testCancelRunning},
		{"ResultsOncePerJob", testResultsOnce},
		{"ResultsTwoFrontEnds", testResultsSideBySide},
		{"SentRecord", testSentRecord},
		{"Progress", testProgress},
		{"OperatorDeadRetryStats", testOperator},
		{"RetryOnce", testRetryOnce},
		{"ClaimHonoursContext", testClaimContext},
		{"Lanes", testLanes},
		{"Steer", testSteer},
		{"Approvals", testApprovals},
		{"ApprovalStates", testApprovalStates},
		{"Inspect", testInspect},
		{"HeartbeatBatch", testHeartbeatBatch},
		{"PoisonIsolation", func(t *testing.T, nq NewQueue) { testPoisonIsolation(t, nq, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, newQueue)
		})
	}
	// Three fleets with random kills, each on a queue of its own: side by
	// side rather than one after the other, as each mostly waits for leases
	// to expire.
	t.Run("PoisonIsolationWithKills", func(t *testing.T) {
		t.Parallel()
		for i := range 3 {
			t.Run(fmt.Sprint(i+1), func(t *testing.T) {
				t.Parallel()
				testPoisonIsolation(t, newQueue, 2)
			})
		}
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func enqueue(t *testing.T, q queue.Queue, j queue.Job) queue.Job {
	t.Helper()
	got, dup, err := q.Enqueue(ctxT(t), j)
	if err != nil || dup {
		t.Fatalf("Enqueue(%+v) = dup %v, err %v", j, dup, err)
	}
	return got
}

func claimOne(t *testing.T, q queue.Queue, consumer string) queue.Lease {
	t.Helper()
	ls, err := q.Claim(ctxT(t), consumer, 1, 2*time.Second)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Claim = %d leases, err %v; want 1", len(ls), err)
	}
	return ls[0]
}

// claimUntil polls Claim until it returns a lease or the deadline passes.
func claimUntil(t *testing.T, q queue.Queue, consumer string, within time.Duration) []queue.Lease {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ls, err := q.Claim(ctxT(t), consumer, 10, 50*time.Millisecond)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if len(ls) > 0 {
			return ls
		}
	}
	return nil
}

// readResults collects results until want arrived or the deadline passes.
func readResults(t *testing.T, q queue.Queue, consumer string, want int) []queue.Delivery {
	t.Helper()
	var out []queue.Delivery
	deadline := time.Now().Add(5 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		ds, err := q.ReadResults(ctxT(t), consumer, 10, 100*time.Millisecond)
		if err != nil {
			t.Fatalf("ReadResults: %v", err)
		}
		out = append(out, ds...)
	}
	return out
}

func testEnqueueClaimAck(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	in := queue.Job{ChatID: -1001234567890123, UserID: 42, Goal: "say hi", SessionID: "s1", Budget: &queue.Budget{MaxToolCalls: 3, MaxRuntimeSeconds: 1.5,
		MaxTotalTokens: 400, CappedBy: queue.CappedByUser}}
	j := enqueue(t, q, in)
	if j.ID == "" || j.CreatedAt.IsZero() {
		t.Fatalf("Enqueue did not fill ID/CreatedAt: %+v", j)
	}
	l := claimOne(t, q, "w1")
	if l.Job.ID != j.ID || l.Job.Goal != "say hi" || l.Job.ChatID != in.ChatID || l.Job.Attempt != 1 || l.Job.Budget == nil || *l.Job.Budget != *in.Budget {
		t.Fatalf("claimed %+v, want job %s attempt 1 with the enqueued fields", l.Job, j.ID)
	}
	if err := q.Heartbeat(ctxT(t), l); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	if ls, err := q.Claim(ctxT(t), "w2", 5, 0); err != nil || len(ls) != 0 {
		t.Fatalf("second Claim while leased = %d, %v; want none", len(ls), err)
	}
	// CappedBy comes from the job, whatever the worker's result says: any
	// front end that delivers it can tell whose budget a stop used up.
	res := queue.Result{Status: queue.StatusSucceeded, Answer: "hi", DurationMS: 7, Usage: queue.Usage{PromptTokens: 3},
		Artifacts: []queue.ArtifactMeta{{Path: "a/b.txt", Bytes: 2}}, CappedBy: queue.CappedByChat}
	if op, ok := q.(queue.Operator); ok {
		if _, ok, err := op.JobResult(ctxT(t), j.ID); ok || err != nil {
			t.Fatalf("JobResult of a running job = %v, %v; want not ok", ok, err)
		}
	}
	if err := q.Ack(ctxT(t), l, res); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if op, ok := q.(queue.Operator); ok {
		got, ok, err := op.JobResult(ctxT(t), j.ID)
		if err != nil || !ok || got.Answer != "hi" || got.JobID != j.ID || len(got.Artifacts) != 1 {
			t.Fatalf("JobResult after Ack = %+v, %v, %v", got, ok, err)
		}
	}
	if err := q.Ack(ctxT(t), l, res); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("second Ack = %v, want ErrLeaseLost", err)
	}
	if err := q.Heartbeat(ctxT(t), l); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("Heartbeat after Ack = %v, want ErrLeaseLost", err)
	}
	ds := readResults(t, q, "fe1", 1)
	if len(ds) != 1 {
		t.Fatalf("got %d results, want 1", len(ds))
	}
	r := ds[0].Result
	if r.JobID != j.ID || r.ChatID != in.ChatID || r.Answer != "hi" || r.Status != queue.StatusSucceeded || r.Attempt != 1 || len(r.Artifacts) != 1 ||
		r.CappedBy != queue.CappedByUser {
		t.Fatalf("result %+v does not match the ack", r)
	}
}

func testIdempotency(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	a := enqueue(t, q, queue.Job{ChatID: 1, Goal: "g", IdempotencyKey: "upd-1"})
	b, dup, err := q.Enqueue(ctxT(t), queue.Job{ChatID: 1, Goal: "g again", IdempotencyKey: "upd-1"})
	if err != nil || !dup || b.ID != a.ID {
		t.Fatalf("duplicate Enqueue = %s dup %v err %v; want %s dup true", b.ID, dup, err, a.ID)
	}
	// A clashing explicit id is rejected and must not burn its key.
	if _, _, err := q.Enqueue(ctxT(t), queue.Job{ID: a.ID, ChatID: 1, Goal: "clash", IdempotencyKey: "upd-2"}); !errors.Is(err, queue.ErrInvalidJob) {
		t.Fatalf("Enqueue with an existing id = %v, want ErrInvalidJob", err)
	}
	enqueue(t, q, queue.Job{ChatID: 1, Goal: "g2", IdempotencyKey: "upd-2"})
	l := claimOne(t, q, "w")
	if l.Job.ID != a.ID {
		t.Fatalf("claimed %s, want %s", l.Job.ID, a.ID)
	}
	if err := q.Ack(ctxT(t), l, queue.Result{}); err != nil {
		t.Fatal(err)
	}
	l2 := claimOne(t, q, "w")
	if l2.Job.Goal != "g2" {
		t.Fatalf("second job goal %q, want g2 (the duplicate must not be queued)", l2.Job.Goal)
	}
	if err := q.Ack(ctxT(t), l2, queue.Result{}); err != nil {
		t.Fatal(err)
	}
	if ls, _ := q.Claim(ctxT(t), "w", 5, 0); len(ls) != 0 {
		t.Fatalf("a third job exists: %+v", ls[0].Job)
	}
}

func testPayloadCap(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{MaxPayloadBytes: 1000})
	_, _, err := q.Enqueue(ctxT(t), queue.Job{ChatID: 1, Goal: strings.Repeat("x", 2000)})
	var pe *queue.PayloadTooLargeError
	if !errors.Is(err, queue.ErrPayloadTooLarge) || !errors.As(err, &pe) || pe.Limit != 1000 || pe.Size <= 2000 {
		t.Fatalf("Enqueue of a 2000-byte goal = %v, want PayloadTooLargeError limit 1000 size > 2000", err)
	}
	if !strings.Contains(err.Error(), "1000") {
		t.Fatalf("error %q does not name the limit", err)
	}
	if err := q.PublishProgress(ctxT(t), "j1", make([]byte, 1001)); !errors.Is(err, queue.ErrPayloadTooLarge) {
		t.Fatalf("PublishProgress over cap = %v", err)
	}
	enqueue(t, q, queue.Job{ChatID: 1, Goal: "small"})
	l := claimOne(t, q, "w")
	if err := q.Ack(ctxT(t), l, queue.Result{Answer: strings.Repeat("y", 2000)}); !errors.Is(err, queue.ErrPayloadTooLarge) {
		t.Fatalf("Ack with oversized answer = %v", err)
	}
	if err := q.Ack(ctxT(t), l, queue.Result{Status: queue.StatusFailed, Error: "answer too large"}); err != nil {
		t.Fatalf("lease must survive a rejected Ack: %v", err)
	}
}

func testInvalid(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	for _, j := range []queue.Job{
		{Goal: "no chat"},
		{ChatID: 1},
		{ChatID: 1, Goal: "g", ID: "bad id with spaces"},
		{ChatID: 1, Goal: "g", ID: strings.Repeat("a", queue.MaxIDLen+1)},
		{ChatID: 1, Goal: "g", Budget: &queue.Budget{MaxToolCalls: -1}},
		{ChatID: 1, Goal: "g", Budget: &queue.Budget{CappedBy: "admin"}},
	} {
		if _, _, err := q.Enqueue(ctxT(t), j); !errors.Is(err, queue.ErrInvalidJob) {
			t.Errorf("Enqueue(%+v) = %v, want ErrInvalidJob", j, err)
		}
	}
}

func testReclaim(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{LeaseTTL: 150 * time.Millisecond})
	j := enqueue(t, q, queue.Job{ChatID: 5, Goal: "g"})
	dead := claimOne(t, q, "dying")
	ls := claimUntil(t, q, "rescuer", 5*time.Second)
	if len(ls) != 1 || ls[0].Job.ID != j.ID || ls[0].Job.Attempt != 2 || ls[0].Consumer != "rescuer" {
		t.Fatalf("reclaim = %+v, want job %s attempt 2 for rescuer", ls, j.ID)
	}
	if err := q.Heartbeat(ctxT(t), dead); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("old worker's Heartbeat = %v, want ErrLeaseLost", err)
	}
	if err := q.Ack(ctxT(t), dead, queue.Result{Answer: "stale"}); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("old worker's Ack = %v, want ErrLeaseLost", err)
	}
	if err := q.Ack(ctxT(t), ls[0], queue.Result{Answer: "fresh"}); err != nil {
		t.Fatal(err)
	}
	ds := readResults(t, q, "fe", 1)
	if len(ds) != 1 || ds[0].Result.Answer != "fresh" || ds[0].Result.Attempt != 2 {
		t.Fatalf("results %+v, want one from attempt 2", ds)
	}
}

// testDeadLetter: the first attempt's death makes the job a suspect; each
// later attempt runs alone, and MaxAttempts deaths alone dead-letter it.
func testDeadLetter(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{LeaseTTL: 100 * time.Millisecond, MaxAttempts: 2})
	j := enqueue(t, q, queue.Job{ChatID: 9, Goal: "poison"})
	next := enqueue(t, q, queue.Job{ChatID: 9, Goal: "after poison"})
	if l := claimOne(t, q, "w1"); l.Suspect {
		t.Fatalf("first claim is a suspect: %+v", l)
	}
	for attempt := 2; attempt <= 3; attempt++ {
		ls := claimUntil(t, q, fmt.Sprintf("w%d", attempt), 5*time.Second)
		if len(ls) != 1 || ls[0].Job.ID != j.ID || ls[0].Job.Attempt != attempt || !ls[0].Suspect {
			t.Fatalf("attempt %d = %+v, want the job alone as a suspect", attempt, ls)
		}
	}
	// The third lease expires too: two deaths alone, the job is dead and
	// its chat moves on.
	ls := claimUntil(t, q, "w4", 5*time.Second)
	if len(ls) != 1 || ls[0].Job.ID != next.ID || ls[0].Job.Attempt != 1 || ls[0].Suspect {
		t.Fatalf("after dead-lettering got %+v, want the chat's next job %s", ls, next.ID)
	}
	ds := readResults(t, q, "fe", 1)
	if len(ds) != 1 || ds[0].Result.JobID != j.ID || ds[0].Result.Status != queue.StatusDeadLettered || !strings.Contains(ds[0].Result.Error, "MaxAttempts 2") || ds[0].Result.ChatID != 9 || ds[0].Result.Attempt != 3 {
		t.Fatalf("results %+v, want one dead_lettered failure for %s", ds, j.ID)
	}
	if in, ok := q.(queue.Inspector); ok {
		dl, err := in.DeadEntries(ctxT(t), 0)
		if err != nil || len(dl) != 1 || dl[0].Job.ID != j.ID || dl[0].Strikes != 2 || dl[0].Job.Attempt != 3 || len(dl[0].History) != 3 || dl[0].At.IsZero() {
			t.Fatalf("DeadEntries = %+v, %v; want %s with 2 strikes, 3 attempts, 3 history lines", dl, err, j.ID)
		}
		if !strings.Contains(dl[0].History[0].Reason, "beside other jobs") || !strings.Contains(dl[0].History[2].Reason, "alone") || dl[0].History[1].Worker != "w2" {
			t.Fatalf("history %+v", dl[0].History)
		}
		info, ok, err := in.Inspect(ctxT(t), j.ID)
		if err != nil || !ok || info.State != queue.StateDead || info.Strikes != 2 || len(info.History) != 3 {
			t.Fatalf("Inspect of the dead job = %+v, %v, %v", info, ok, err)
		}
		if n, err := in.PurgeDead(ctxT(t), time.Hour); err != nil || n != 0 {
			t.Fatalf("PurgeDead(1h) = %d, %v; want 0 (the entry is younger)", n, err)
		}
		if n, err := in.PurgeDead(ctxT(t), -time.Second); err != nil || n != 1 {
			t.Fatalf("PurgeDead(now) = %d, %v; want 1", n, err)
		}
	}
}

func testOtherChats(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	a1 := enqueue(t, q, queue.Job{ChatID: 1, Goal: "a1"})
	enqueue(t, q, queue.Job{ChatID: 1, Goal: "a2"})
	b1 := enqueue(t, q, queue.Job{ChatID: 2, Goal: "b1"})
	ls, err := q.Claim(ctxT(t), "w", 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range ls {
		got[l.Job.ID] = true
	}
	if len(ls) != 2 || !got[a1.ID] || !got[b1.ID] {
		t.Fatalf("Claim(10) got %d jobs %v, want exactly a1 and b1 (a2 waits for a1)", len(ls), got)
	}
}

func testPerChatOrder(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	const chats, perChat, workers = 3, 6, 4
	want := map[int64][]string{}
	for i := 0; i < perChat; i++ {
		for c := int64(1); c <= chats; c++ {
			j := enqueue(t, q, queue.Job{ChatID: c, Goal: fmt.Sprintf("c%d-%d", c, i)})
			want[c] = append(want[c], j.ID)
		}
	}
	var (
		mu      sync.Mutex
		running = map[int64]int{}
		order   = map[int64][]string{}
		done    int
		fail    string
	)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			for {
				mu.Lock()
				finished := done == chats*perChat || fail != ""
				mu.Unlock()
				if finished || ctx.Err() != nil {
					return
				}
				ls, err := q.Claim(ctx, name, 2, 50*time.Millisecond)
				if err != nil {
					mu.Lock()
					fail = err.Error()
					mu.Unlock()
					return
				}
				for _, l := range ls {
					mu.Lock()
					running[l.Job.ChatID]++
					if running[l.Job.ChatID] > 1 {
						fail = fmt.Sprintf("chat %d has two jobs running", l.Job.ChatID)
					}
					order[l.Job.ChatID] = append(order[l.Job.ChatID], l.Job.ID)
					mu.Unlock()
					mu.Lock()
					running[l.Job.ChatID]--
					done++
					mu.Unlock()
					if err := q.Ack(ctx, l, queue.Result{}); err != nil {
						mu.Lock()
						fail = "Ack: " + err.Error()
						mu.Unlock()
					}
				}
			}
		}(fmt.Sprintf("w%d", w))
	}
	wg.Wait()
	if fail != "" {
		t.Fatal(fail)
	}
	for c, ids := range want {
		if strings.Join(order[c], ",") != strings.Join(ids, ",") {
			t.Errorf("chat %d ran %v, want arrival order %v", c, order[c], ids)
		}
	}
}

func testCancelWaiting(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	a := enqueue(t, q, queue.Job{ChatID: 1, Goal: "a"})
	b := enqueue(t, q, queue.Job{ChatID: 1, Goal: "b"})
	c := enqueue(t, q, queue.Job{ChatID: 1, Goal: "c"})
	if err := q.Cancel(ctxT(t), b.ID); err != nil {
		t.Fatalf("Cancel waiting job: %v", err)
	}
	if err := q.Cancel(ctxT(t), b.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("second Cancel = %v, want ErrNotFound", err)
	}
	if err := q.Cancel(ctxT(t), "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Cancel unknown = %v, want ErrNotFound", err)
	}
	l := claimOne(t, q, "w")
	if l.Job.ID != a.ID {
		t.Fatalf("claimed %s, want %s", l.Job.ID, a.ID)
	}
	if err := q.Ack(ctxT(t), l, queue.Result{}); err != nil {
		t.Fatal(err)
	}
	l = claimOne(t, q, "w")
	if l.Job.ID != c.ID {
		t.Fatalf("claimed %s after a, want %s (b was canceled)", l.Job.ID, c.ID)
	}
	ds := readResults(t, q, "fe", 2)
	var canceled int
	for _, d := range ds {
		if d.Result.JobID == b.ID && d.Result.Status == queue.StatusCanceled {
			canceled++
		}
	}
	if canceled != 1 {
		t.Fatalf("results %+v, want one canceled result for %s", ds, b.ID)
	}
}

func testCancelRunning(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	j := enqueue(t, q, queue.Job{ChatID: 3, Goal: "long"})
	l := claimOne(t, q, "w")
	if err := q.Cancel(ctxT(t), j.ID); err != nil {
		t.Fatalf("Cancel running: %v", err)
	}
	if err := q.Heartbeat(ctxT(t), l); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("Heartbeat after Cancel = %v, want ErrCanceled", err)
	}
	if err := q.Ack(ctxT(t), l, queue.Result{Status: queue.StatusCanceled, Answer: "partial"}); err != nil {
		t.Fatalf("Ack of canceled job: %v", err)
	}
	ds := readResults(t, q, "fe", 1)
	if len(ds) != 1 || ds[0].Result.Status != queue.StatusCanceled || ds[0].Result.Answer != "partial" {
		t.Fatalf("results %+v, want the worker's canceled result", ds)
	}
}

func testResultsOnce(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{ResultLeaseTTL: 150 * time.Millisecond})
	const n = 5
	for i := 0; i < n; i++ {
		enqueue(t, q, queue.Job{ChatID: int64(100 + i), Goal: "g"})
	}
	ls, err := q.Claim(ctxT(t), "w", n, time.Second)
	if err != nil || len(ls) != n {
		t.Fatalf("Claim = %d, %v", len(ls), err)
	}
	for _, l := range ls {
		if err := q.Ack(ctxT(t), l, queue.Result{Answer: l.Job.ID}); err != nil {
			t.Fatal(err)
		}
	}
	// Front end 1 reads everything but acknowledges only two, then "dies".
	first := readResults(t, q, "fe1", n)
	if len(first) != n {
		t.Fatalf("fe1 read %d results, want %d", len(first), n)
	}
	seen := map[string]int{}
	for _, d := range first[:2] {
		if err := q.AckResult(ctxT(t), d); err != nil {
			t.Fatal(err)
		}
		seen[d.Result.JobID]++
	}
	// Front end 2 takes over the three unacknowledged ones after the result lease.
	rest := readResults(t, q, "fe2", n-2)
	for _, d := range rest {
		seen[d.Result.JobID]++
		if err := q.AckResult(ctxT(t), d); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("delivered %d distinct jobs, want %d: %v", len(seen), n, seen)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %s delivered %d times", id, c)
		}
	}
	if ds, err := q.ReadResults(ctxT(t), "fe3", 10, 300*time.Millisecond); err != nil || len(ds) != 0 {
		t.Fatalf("after all acks ReadResults = %d, %v; want none", len(ds), err)
	}
}

func testProgress(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{ProgressMaxLen: 50})
	got := make(chan []queue.Progress, 1)
	go func() {
		ps, _ := q.ReadProgress(context.Background(), "job-p", "", 10, 5*time.Second)
		got <- ps
	}()
	if err := q.PublishProgress(ctxT(t), "job-p", []byte(`{"type":"run_started"}`)); err != nil {
		t.Fatal(err)
	}
	ps := <-got
	if len(ps) == 0 || string(ps[0].Data) != `{"type":"run_started"}` {
		t.Fatalf("live reader got %+v", ps)
	}
	for i := 0; i < 200; i++ {
		if err := q.PublishProgress(ctxT(t), "job-p", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	all, err := q.ReadProgress(ctxT(t), "job-p", "", 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 50 || len(all) > 150 || string(all[len(all)-1].Data) != "199" {
		t.Fatalf("bounded stream has %d entries ending %q; want about 50 ending 199", len(all), all[len(all)-1].Data)
	}
	after, err := q.ReadProgress(ctxT(t), "job-p", all[len(all)-2].ID, 10, 0)
	if err != nil || len(after) != 1 || string(after[0].Data) != "199" {
		t.Fatalf("ReadProgress after second-to-last = %+v, %v", after, err)
	}
}

func testCancelReady(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	j := enqueue(t, q, queue.Job{ChatID: 7, Goal: "head of its chat, never claimed"})
	if err := q.Cancel(ctxT(t), j.ID); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if ls, err := q.Claim(ctxT(t), "w", 5, 100*time.Millisecond); err != nil || len(ls) != 0 {
		t.Fatalf("Claim after Cancel = %d leases, %v; want none", len(ls), err)
	}
	next := enqueue(t, q, queue.Job{ChatID: 7, Goal: "next"})
	if l := claimOne(t, q, "w"); l.Job.ID != next.ID {
		t.Fatalf("claimed %s, want %s (the chat must be free again)", l.Job.ID, next.ID)
	}
	ds := readResults(t, q, "fe", 1)
	if len(ds) != 1 || ds[0].Result.JobID != j.ID || ds[0].Result.Status != queue.StatusCanceled || ds[0].Result.ChatID != 7 {
		t.Fatalf("results %+v, want one canceled result for %s", ds, j.ID)
	}
}

// A Claim blocked for a long time returns when its context is canceled,
// so a worker's shutdown is not held up by an idle queue.
func testClaimContext(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := q.Claim(ctx, "w", 1, time.Hour)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim after cancel = %v, want context.Canceled", err)
	}
}

// testOperator checks Stats, DeadLetters and Retry of queues that implement
// queue.Operator.
func testOperator(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{LeaseTTL: 100 * time.Millisecond, MaxAttempts: 1})
	op, ok := q.(queue.Operator)
	if !ok {
		t.Skip("queue does not implement queue.Operator")
	}
	j := enqueue(t, q, queue.Job{ChatID: 11, Goal: "poison", SessionID: "s"})
	enqueue(t, q, queue.Job{ChatID: 12, Goal: "other"})
	claimOne(t, q, "w1")
	st, err := op.Stats(ctxT(t))
	if err != nil || st.Running != 1 || st.Ready != 1 || st.RunningBy["w1"] != 1 {
		t.Fatalf("Stats = %+v, %v; want 1 running (w1), 1 ready", st, err)
	}
	// w1 "dies"; the job is handed out alone, its worker dies again, and
	// with MaxAttempts 1 that death alone dead-letters it.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ls, err := q.Claim(ctxT(t), "w2", 1, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls { // chat 12's job: w2 finishes it
			if l.Job.ID == j.ID {
				continue // the poison: w2 "dies" on it
			}
			if err := q.Ack(ctxT(t), l, queue.Result{}); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ = op.Stats(ctxT(t)); st.Dead == 1 {
			break
		}
	}
	if res, ok, err := op.JobResult(ctxT(t), j.ID); err != nil || !ok || res.Status != queue.StatusDeadLettered {
		t.Fatalf("JobResult of the dead job = %+v, %v, %v", res, ok, err)
	}
	if _, ok, err := op.JobResult(ctxT(t), "unknown-job"); ok || err != nil {
		t.Fatalf("JobResult of an unknown job = %v, %v", ok, err)
	}
	dead, err := op.DeadLetters(ctxT(t), 0)
	if err != nil || len(dead) != 1 || dead[0].ID != j.ID || dead[0].Attempt != 2 {
		t.Fatalf("DeadLetters = %+v, %v; want %s at attempt 2", dead, err, j.ID)
	}
	if _, err := op.Retry(ctxT(t), "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Retry unknown = %v, want ErrNotFound", err)
	}
	nj, err := op.Retry(ctxT(t), j.ID)
	if err != nil || nj.ID == j.ID || nj.Goal != "poison" || nj.ChatID != 11 || nj.SessionID != "s" {
		t.Fatalf("Retry = %+v, %v; want a new job copying chat, goal, session", nj, err)
	}
	if dead, _ := op.DeadLetters(ctxT(t), 0); len(dead) != 0 {
		t.Fatalf("dead job still listed after Retry: %+v", dead)
	}
	ls := claimUntil(t, q, "w3", 5*time.Second)
	if len(ls) != 1 || ls[0].Job.ID != nj.ID {
		t.Fatalf("claimed %+v, want the retried job %s", ls, nj.ID)
	}
}

// testRetryOnce: operators retrying one dead job at the same moment requeue
// it once; the others get ErrNotFound.
func testRetryOnce(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{LeaseTTL: 50 * time.Millisecond, MaxAttempts: 1})
	op, ok := q.(queue.Operator)
	if !ok {
		t.Skip("queue does not implement queue.Operator")
	}
	j := enqueue(t, q, queue.Job{ChatID: 13, Goal: "poison"})
	claimOne(t, q, "w1") // w1 "dies"
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := q.Claim(ctxT(t), "w2", 1, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if st, _ := op.Stats(ctxT(t)); st.Dead == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("job not dead-lettered within 5s")
		}
	}
	const n = 8
	errs := make(chan error, n)
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nj, err := op.Retry(ctxT(t), j.ID)
			if err == nil {
				ids <- nj.ID
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	close(ids)
	for err := range errs {
		if err != nil && !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("Retry = %v, want nil or ErrNotFound", err)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d concurrent Retry calls requeued the dead job %d times, want once", n, len(ids))
	}
	if st, err := op.Stats(ctxT(t)); err != nil || st.Dead != 0 || st.Ready != 1 {
		t.Fatalf("Stats after retry = %+v, %v; want 0 dead, 1 ready", st, err)
	}
}

// Two front ends reading side by side see each result exactly once.
func testResultsSideBySide(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	const n = 40
	for i := 0; i < n; i++ {
		enqueue(t, q, queue.Job{ChatID: int64(200 + i), Goal: "g"})
	}
	for acked := 0; acked < n; {
		ls, err := q.Claim(ctxT(t), "w", n, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if err := q.Ack(ctxT(t), l, queue.Result{}); err != nil {
				t.Fatal(err)
			}
			acked++
		}
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for _, fe := range []string{"feA", "feB"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				mu.Lock()
				total := len(seen)
				mu.Unlock()
				if total == n {
					return
				}
				ds, err := q.ReadResults(ctxT(t), fe, 3, 50*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				for _, d := range ds {
					mu.Lock()
					seen[d.Result.JobID]++
					mu.Unlock()
					if err := q.AckResult(ctxT(t), d); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct results delivered, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("result of %s delivered %d times", id, c)
		}
	}
}

// A question reaches one front end once, the first answer wins and wakes
// the asking worker, and a late or unknown answer is ErrNotFound.
func testApprovals(t *testing.T, nq NewQueue) {
	q, ok := nq(t, queue.Options{}).(queue.Approvals)
	if !ok {
		t.Fatal("queue does not implement queue.Approvals")
	}
	ctx := ctxT(t)
	if _, err := q.Ask(ctx, queue.Approval{JobID: "j1", ChatID: 5}); !errors.Is(err, queue.ErrInvalidJob) {
		t.Fatalf("Ask without a question = %v, want ErrInvalidJob", err)
	}
	if _, err := q.Ask(ctx, queue.Approval{JobID: "j1", ChatID: 5, Question: strings.Repeat("x", queue.MaxQuestionBytes+1)}); !errors.Is(err, queue.ErrPayloadTooLarge) {
		t.Fatalf("Ask with a huge question = %v, want ErrPayloadTooLarge", err)
	}
	a, err := q.Ask(ctx, queue.Approval{JobID: "j1", ChatID: 5, Question: "run `make deploy`?", Deadline: time.Now().Add(10 * time.Second)})
	if err != nil || a.ID == "" {
		t.Fatalf("Ask = %+v, %v", a, err)
	}
	if _, ok, err := q.AwaitAnswer(ctx, a.ID, 0); ok || err != nil {
		t.Fatalf("AwaitAnswer before any answer = ok %v, err %v", ok, err)
	}
	var got []queue.Approval
	deadline := time.Now().Add(5 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		as, err := q.ReadApprovals(ctx, "fe1", 10, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, as...)
	}
	if len(got) != 1 || got[0].ID != a.ID || got[0].ChatID != 5 || got[0].Question != a.Question {
		t.Fatalf("ReadApprovals = %+v, want the one question", got)
	}
	if as, err := q.ReadApprovals(ctx, "fe2", 10, 0); err != nil || len(as) != 0 {
		t.Fatalf("second front end read %+v, %v; want nothing", as, err)
	}
	answered := make(chan bool, 1)
	go func() {
		allow, ok, err := q.AwaitAnswer(ctx, a.ID, 5*time.Second)
		if err != nil || !ok {
			t.Errorf("AwaitAnswer = ok %v, err %v", ok, err)
		}
		answered <- allow
	}()
	if err := q.Answer(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := q.Answer(ctx, a.ID, false); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("second Answer = %v, want ErrNotFound", err)
	}
	if allow := <-answered; !allow {
		t.Fatal("worker saw deny, want allow")
	}
	if err := q.Answer(ctx, "0123456789abcdef0123456789abcdef", true); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Answer of an unknown question = %v, want ErrNotFound", err)
	}
	late, err := q.Ask(ctx, queue.Approval{JobID: "j1", ChatID: 5, Question: "too late?", Deadline: time.Now().Add(20 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	for time.Now().Before(late.Deadline.Add(50 * time.Millisecond)) {
		if _, _, err := q.AwaitAnswer(ctx, late.ID, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Answer(ctx, late.ID, true); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Answer after the deadline = %v, want ErrNotFound", err)
	}
}

// testInspect checks Stats' queued counts and Inspector of queues that
// implement both.
func testInspect(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	op, ok1 := q.(queue.Operator)
	in, ok2 := q.(queue.Inspector)
	if !ok1 || !ok2 {
		t.Skip("queue does not implement queue.Operator and queue.Inspector")
	}
	a1 := enqueue(t, q, queue.Job{ChatID: 21, Goal: "a1"})
	a2 := enqueue(t, q, queue.Job{ChatID: 21, Goal: "a2"})
	enqueue(t, q, queue.Job{ChatID: 22, Goal: "b1"})
	st, err := op.Stats(ctxT(t))
	if err != nil || st.Queued != 3 || st.Ready != 2 || st.OldestQueued.IsZero() || st.OldestQueued.After(a2.CreatedAt) {
		t.Fatalf("Stats = %+v, %v; want 3 queued (one behind its chat's head), 2 ready, oldest set", st, err)
	}
	for id, want := range map[string]string{a1.ID: queue.StateReady, a2.ID: queue.StateQueued} {
		if info, ok, err := in.Inspect(ctxT(t), id); err != nil || !ok || info.State != want || info.Job.ChatID != 21 {
			t.Fatalf("Inspect(%s) = %+v, %v, %v; want state %s", id, info, ok, err, want)
		}
	}
	if _, ok, err := in.Inspect(ctxT(t), "no-such-job"); ok || err != nil {
		t.Fatalf("Inspect of an unknown job = %v, %v", ok, err)
	}
	ls, err := q.Claim(ctxT(t), "w-inspect", 10, time.Second)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Claim = %d, %v", len(ls), err)
	}
	var l queue.Lease
	for _, x := range ls {
		if x.Job.ID == a1.ID {
			l = x
		}
	}
	info, ok, err := in.Inspect(ctxT(t), a1.ID)
	if err != nil || !ok || info.State != queue.StateRunning || info.Worker != "w-inspect" || info.Attempt != 1 || info.LeaseLeft <= 0 || info.Since.IsZero() {
		t.Fatalf("Inspect of a running job = %+v, %v, %v", info, ok, err)
	}
	if ids, err := in.RunningJobs(ctxT(t), 0); err != nil || len(ids) != 2 {
		t.Fatalf("RunningJobs = %v, %v; want 2", ids, err)
	}
	if st, _ := op.Stats(ctxT(t)); st.Queued != 1 || st.Running != 2 || st.RunningBy["w-inspect"] != 2 {
		t.Fatalf("Stats after claim = %+v; want 1 queued, 2 running by w-inspect", st)
	}
	if err := q.Ack(ctxT(t), l, queue.Result{Answer: "done a1"}); err != nil {
		t.Fatal(err)
	}
	info, ok, err = in.Inspect(ctxT(t), a1.ID)
	if err != nil || !ok || info.State != queue.StateDone || info.Result == nil || info.Result.Answer != "done a1" {
		t.Fatalf("Inspect of a finished job = %+v, %v, %v", info, ok, err)
	}
	if err := in.RegisterWorker(ctxT(t), queue.WorkerInfo{Name: "w-inspect", Version: "v1", Concurrency: 4, Running: 2}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := in.RegisterWorker(ctxT(t), queue.WorkerInfo{Name: "w-gone", Concurrency: 1}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ws, err := in.Workers(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 1 && ws[0].Name == "w-inspect" && ws[0].Concurrency == 4 && ws[0].Version == "v1" && !ws[0].LastSeen.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Workers = %+v; want only w-inspect (w-gone's registration expired)", ws)
		}
	}
	if err := in.UnregisterWorker(ctxT(t), "w-inspect"); err != nil {
		t.Fatal(err)
	}
	if ws, err := in.Workers(ctxT(t)); err != nil || len(ws) != 0 {
		t.Fatalf("Workers after unregister = %+v, %v", ws, err)
	}
}

// testHeartbeatBatch: a batch renews what Heartbeat would, lease by lease.
func testHeartbeatBatch(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	hb, ok := q.(queue.HeartbeatBatcher)
	if !ok {
		t.Skip("queue does not implement queue.HeartbeatBatcher")
	}
	for c := int64(31); c <= 33; c++ {
		enqueue(t, q, queue.Job{ChatID: c, Goal: "beat"})
	}
	ls, err := q.Claim(ctxT(t), "w-batch", 10, time.Second)
	if err != nil || len(ls) != 3 {
		t.Fatalf("Claim = %d, %v", len(ls), err)
	}
	if errs := hb.HeartbeatBatch(ctxT(t), ls); len(errs) != 3 || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("HeartbeatBatch = %v, want 3 nil", errs)
	}
	if err := q.Ack(ctxT(t), ls[0], queue.Result{}); err != nil {
		t.Fatal(err)
	}
	if err := q.Cancel(ctxT(t), ls[1].Job.ID); err != nil {
		t.Fatal(err)
	}
	errs := hb.HeartbeatBatch(ctxT(t), ls)
	if len(errs) != 3 || !errors.Is(errs[0], queue.ErrLeaseLost) || !errors.Is(errs[1], queue.ErrCanceled) || errs[2] != nil {
		t.Fatalf("HeartbeatBatch after ack and cancel = %v, want [lease lost, canceled, nil]", errs)
	}
	if errs := hb.HeartbeatBatch(ctxT(t), nil); len(errs) != 0 {
		t.Fatalf("empty batch = %v", errs)
	}
}

// Issue 26 point 6: the question, its prompt notes and the session grants
// are kept in the queue, so a front end that restarted can settle a
// question it did not show.
func testApprovalStates(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	st, ok := q.(queue.ApprovalStates)
	aq, ok2 := q.(queue.Approvals)
	if !ok || !ok2 {
		t.Fatal("queue does not implement queue.ApprovalStates and queue.Approvals")
	}
	ctx := ctxT(t)
	const question = "odek: allow shell (code_execution, argv0=make, command=make deploy)? [y/N] "
	a, err := aq.Ask(ctx, queue.Approval{JobID: "j1", ChatID: 5, UserID: 77, SessionID: "telegram:5", Question: question, Deadline: time.Now().Add(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.PendingApproval(ctx, a.ID)
	if err != nil || got.ID != a.ID || got.UserID != 77 || got.SessionID != "telegram:5" || got.ChatID != 5 || got.Question != question || got.JobID != "j1" {
		t.Fatalf("PendingApproval = %+v, %v", got, err)
	}
	if _, err := st.PendingApproval(ctx, "0123456789abcdef0123456789abcdef"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("PendingApproval of an unknown id = %v, want ErrNotFound", err)
	}
	for i := 0; i < queue.MaxApprovalPrompts+3; i++ {
		if err := st.AddApprovalPrompt(ctx, a.ID, queue.ApprovalPrompt{ChatID: int64(5 + i), MessageID: 10 + i, Lang: "de"}); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := st.ApprovalPrompts(ctx, a.ID)
	if err != nil || len(ps) != queue.MaxApprovalPrompts || ps[0] != (queue.ApprovalPrompt{ChatID: 5, MessageID: 10, Lang: "de"}) {
		t.Fatalf("ApprovalPrompts = %d notes (%+v), %v", len(ps), ps, err)
	}
	if err := aq.Answer(ctx, a.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PendingApproval(ctx, a.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("PendingApproval after the answer = %v, want ErrNotFound", err)
	}
	if ps, _ := st.ApprovalPrompts(ctx, a.ID); len(ps) != queue.MaxApprovalPrompts {
		t.Fatalf("the prompt notes went with the answer (%d left); a late press must still find them", len(ps))
	}
	if err := st.AddApprovalPrompt(ctx, a.ID, queue.ApprovalPrompt{ChatID: 1, MessageID: 1}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("AddApprovalPrompt of an answered question = %v, want ErrNotFound", err)
	}

	// Grants: exactly the question, in exactly the session.
	if ok, err := st.SessionGranted(ctx, "telegram:5", question); ok || err != nil {
		t.Fatalf("granted before any grant: %v %v", ok, err)
	}
	for _, bad := range []string{"run `make deploy`?", "odek: allow shell (code_execution, command=make …)? [y/N]", "odek: allow shell (code_execution, command=curl -H [REDACTED])? [y/N]"} {
		if err := st.GrantSession(ctx, "telegram:5", bad, time.Hour); !errors.Is(err, queue.ErrInvalidJob) {
			t.Errorf("GrantSession(%q) = %v, want ErrInvalidJob", bad, err)
		}
	}
	if err := st.GrantSession(ctx, "", question, time.Hour); !errors.Is(err, queue.ErrInvalidJob) {
		t.Errorf("GrantSession without a session = %v, want ErrInvalidJob", err)
	}
	if err := st.GrantSession(ctx, "telegram:5", question, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		session, question string
		want              bool
	}{
		{"telegram:5", question, true},
		{"telegram:5", strings.TrimSpace(question), true},
		{"telegram:6", question, false},
		{"telegram:5:1700000000", question, false},
		{"telegram:5", strings.Replace(question, "make deploy", "make deploy2", 1), false},
		{"telegram:5", strings.Replace(question, "code_execution", "system_write", 1), false},
	} {
		if ok, err := st.SessionGranted(ctx, c.session, c.question); ok != c.want || err != nil {
			t.Errorf("SessionGranted(%q, %q) = %v, %v; want %v", c.session, c.question, ok, err, c.want)
		}
	}
	// An unanswered question is handed out once after its deadline, with
	// its prompt notes; an answered one never.
	exp, err := aq.Ask(ctx, queue.Approval{JobID: "j2", ChatID: 5, UserID: 77, Question: question, Deadline: time.Now().Add(150 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddApprovalPrompt(ctx, exp.ID, queue.ApprovalPrompt{ChatID: 5, MessageID: 99}); err != nil {
		t.Fatal(err)
	}
	if early, err := st.ExpiredApprovals(ctx, 10); err != nil || len(early) != 0 {
		t.Fatalf("ExpiredApprovals before the deadline = %+v, %v", early, err)
	}
	var expired []queue.ExpiredApproval
	for deadline := time.Now().Add(5 * time.Second); len(expired) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if expired, err = st.ExpiredApprovals(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	if len(expired) != 1 || expired[0].Approval.ID != exp.ID || expired[0].Approval.UserID != 77 || len(expired[0].Prompts) != 1 || expired[0].Prompts[0].MessageID != 99 {
		t.Fatalf("ExpiredApprovals = %+v, want the one expired question with its prompt", expired)
	}
	if again, err := st.ExpiredApprovals(ctx, 10); err != nil || len(again) != 0 {
		t.Fatalf("ExpiredApprovals handed a question out twice: %+v, %v", again, err)
	}

	short := strings.Replace(question, "deploy", "short", 1)
	if err := st.GrantSession(ctx, "telegram:5", short, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := st.SessionGranted(ctx, "telegram:5", short)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a grant outlived its ttl")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
