package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// reopen closes s and opens its file again.
func reopen(t *testing.T, s *embedded.Store, o queue.Options) *embedded.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return openT(t, s.Path(), o)
}

// TestRestartKeepsEverything: queued jobs keep their per-chat order, a job
// running when the process stopped is reclaimed as a suspect with its
// attempt counted, an answer written but not acknowledged is handed out
// once more, an acknowledged one never again, and idempotency keys and
// dead letters survive.
func TestRestartKeepsEverything(t *testing.T) {
	ctx := ctxT(t)
	o := queue.Options{MaxAttempts: 1}
	s := openT(t, filepath.Join(t.TempDir(), "store.db"), o)
	var ids []string
	for i := range 3 {
		for _, chat := range []int64{7, 8} {
			j, _, err := s.Enqueue(ctx, queue.Job{ChatID: chat, Goal: fmt.Sprint("g", i), IdempotencyKey: fmt.Sprintf("u%d-%d", chat, i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, j.ID)
		}
	}
	// Chat 7's first job finishes and is delivered; chat 8's first job
	// finishes but its answer is not acknowledged; chat 7's second runs.
	ls, err := s.Claim(ctx, "w", 2, 0)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Claim = %d, %v", len(ls), err)
	}
	for _, l := range ls {
		if err := s.Ack(ctx, l, queue.Result{Answer: "a-" + l.Job.ID}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.ReadResults(ctx, "bot", 10, time.Second)
	if err != nil || len(ds) != 2 {
		t.Fatalf("ReadResults = %d, %v", len(ds), err)
	}
	for _, d := range ds {
		if d.Result.ChatID == 7 {
			if err := s.AckResult(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	run, err := s.Claim(ctx, "w", 1, 0)
	if err != nil || len(run) != 1 {
		t.Fatalf("Claim = %d, %v", len(run), err)
	}

	s = reopen(t, s, o)

	ds, err = s.ReadResults(ctx, "bot", 10, time.Second)
	if err != nil || len(ds) != 1 || ds[0].Result.ChatID != 8 || ds[0].Result.Answer != "a-"+ids[1] {
		t.Fatalf("after restart ReadResults = %+v, %v; want chat 8's one unacknowledged answer", ds, err)
	}
	if err := s.AckResult(ctx, ds[0]); err != nil {
		t.Fatal(err)
	}
	if j, dup, err := s.Enqueue(ctx, queue.Job{ChatID: 7, Goal: "again", IdempotencyKey: "u7-0"}); err != nil || !dup || j.ID != ids[0] {
		t.Fatalf("idempotency after restart: %s dup %v err %v; want %s dup", j.ID, dup, err, ids[0])
	}
	info, ok, err := s.Inspect(ctx, run[0].Job.ID)
	if err != nil || !ok || info.State != queue.StateSuspect || info.Attempt != 1 || len(info.History) != 1 || !strings.Contains(info.History[0].Reason, "restart") {
		t.Fatalf("the job running at the stop: %+v ok %v err %v; want a suspect with attempt 1 and a restart in its history", info, ok, err)
	}
	if res, ok, err := s.JobResult(ctx, ids[0]); err != nil || !ok || res.Answer != "a-"+ids[0] {
		t.Fatalf("JobResult of a job finished before the restart = %+v %v %v", res, ok, err)
	}
	// The suspect runs alone first; then each chat's jobs in order.
	var order []string
	for len(order) < 4 {
		ls, err := s.Claim(ctx, "w2", 1, time.Second)
		if err != nil || len(ls) != 1 {
			t.Fatalf("Claim = %d, %v (order so far %v)", len(ls), err, order)
		}
		if len(order) == 0 && (!ls[0].Suspect || ls[0].Job.ID != run[0].Job.ID || ls[0].Job.Attempt != 2) {
			t.Fatalf("first claim after restart = %+v; want the suspect, attempt 2", ls[0])
		}
		order = append(order, ls[0].Job.ID)
		if err := s.Ack(ctx, ls[0], queue.Result{}); err != nil {
			t.Fatal(err)
		}
	}
	chat7 := []string{}
	chat8 := []string{}
	for _, id := range order {
		for i, want := range ids {
			if id == want {
				if i%2 == 0 {
					chat7 = append(chat7, id)
				} else {
					chat8 = append(chat8, id)
				}
			}
		}
	}
	if fmt.Sprint(chat7) != fmt.Sprint([]string{ids[2], ids[4]}) || fmt.Sprint(chat8) != fmt.Sprint([]string{ids[3], ids[5]}) {
		t.Fatalf("per-chat order after restart: chat 7 %v chat 8 %v; want %v and %v", chat7, chat8, ids[2:5:5], []string{ids[3], ids[5]})
	}
}

// TestProcessKillingJobIsDeadLettered: a job that runs alone when the
// process dies, MaxAttempts times, is dead-lettered at the next start, and
// its chat gets the dead-letter result.
func TestProcessKillingJobIsDeadLettered(t *testing.T) {
	ctx := ctxT(t)
	o := queue.Options{MaxAttempts: 2}
	s := openT(t, filepath.Join(t.TempDir(), "store.db"), o)
	j, _, err := s.Enqueue(ctx, queue.Job{ChatID: 5, Goal: "oom"})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; ; round++ {
		ls, err := s.Claim(ctx, "w", 4, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			break
		}
		if round > 5 {
			t.Fatal("the job was never dead-lettered")
		}
		s = reopen(t, s, o) // the process dies while the job runs
	}
	info, ok, err := s.Inspect(ctx, j.ID)
	if err != nil || !ok || info.State != queue.StateDead || info.Strikes != 2 || info.Attempt != 3 {
		t.Fatalf("Inspect = %+v %v %v; want dead after 2 strikes, 3 attempts", info, ok, err)
	}
	ds, err := s.ReadResults(ctx, "bot", 5, time.Second)
	if err != nil || len(ds) != 1 || ds[0].Result.Status != queue.StatusDeadLettered {
		t.Fatalf("results = %+v %v; want one dead-letter result", ds, err)
	}
	if dl, err := s.DeadEntries(ctx, 0); err != nil || len(dl) != 1 || dl[0].Job.ID != j.ID {
		t.Fatalf("DeadEntries = %+v %v", dl, err)
	}
}

// TestSecondOpenRefused: the store is opened once; a second Open (here,
// in the same process: flock is per open file) is refused with the
// holder's pid, and succeeds after Close.
func TestSecondOpenRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := embedded.Open(path, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = embedded.Open(path, queue.Options{})
	var le *embedded.LockedError
	if !errors.As(err, &le) || !errors.Is(err, embedded.ErrLocked) || le.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprint("process ", os.Getpid())) {
		t.Fatalf("second Open = %v; want a LockedError naming pid %d", err, os.Getpid())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := embedded.Open(path, queue.Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

func TestKV(t *testing.T) {
	ctx := ctxT(t)
	s := openT(t, filepath.Join(t.TempDir(), "store.db"), queue.Options{})
	if err := s.Put(ctx, "ledger", "1_2", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "", "k", nil); err == nil || !strings.Contains(err.Error(), "bucket name") {
		t.Fatalf("empty bucket name: %v", err)
	}
	if err := s.Put(ctx, "b", "k", make([]byte, embedded.MaxKVValueBytes+1)); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("oversized value: %v", err)
	}
	s = reopen(t, s, queue.Options{})
	if v, err := s.Get(ctx, "ledger", "1_2"); string(v) != "x" || err != nil {
		t.Fatalf("Get after restart = %q %v", v, err)
	}
	if err := s.Delete(ctx, "ledger", "1_2"); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.List(ctx, "ledger", 0, func(string, []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("List after Delete = %d %v", n, err)
	}
}
