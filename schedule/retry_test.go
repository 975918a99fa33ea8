package schedule

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
)

func TestStoreRetryAndZones(t *testing.T) { stores(t, storeRetryZones) }

// A one-shot whose job failed is armed again once per failure, up to its
// maximum, by Store.Retry: only while it is disabled and its last fire is
// the failed one, so two workers that see the same result arm it once.
func storeRetryZones(t *testing.T, ns func() Store) {
	ctx := context.Background()
	s := mk(t, 5, "at 2026-12-02T10:05:00Z", t0)
	if err := ns().Create(ctx, s, 0); err != nil {
		t.Fatal(err)
	}
	at := s.Next
	if _, err := ns().Retry(ctx, s.ID, at, at.Add(time.Minute), 3); !errors.Is(err, ErrConflict) {
		t.Fatalf("retry of a schedule that has not fired: %v, want ErrConflict", err)
	}
	r := &Runner{Store: ns(), Queue: queue.NewMemory(queue.Options{}), Now: func() time.Time { return at }}
	if n, err := r.Tick(ctx); n != 1 || err != nil {
		t.Fatalf("tick: %d %v", n, err)
	}
	got, _ := ns().Get(ctx, s.ID)
	if got.Enabled || !got.Last.Equal(at) {
		t.Fatalf("after the fire: %+v", got)
	}
	next := at.Add(30 * time.Second)
	if _, err := ns().Retry(ctx, s.ID, at.Add(time.Second), next, 3); !errors.Is(err, ErrConflict) {
		t.Fatalf("retry naming another fire: %v", err)
	}
	armed, err := ns().Retry(ctx, s.ID, at, next, 3)
	if err != nil || !armed.Enabled || !armed.Next.Equal(next) || armed.Retries != 1 {
		t.Fatalf("retry: %+v %v", armed, err)
	}
	if _, err := ns().Retry(ctx, s.ID, at, next, 3); !errors.Is(err, ErrConflict) {
		t.Fatalf("second retry of the same failure: %v, want ErrConflict", err)
	}
	if due, _ := ns().Due(ctx, next, 10); len(due) != 1 || due[0].ID != s.ID {
		t.Fatalf("the retried one-shot is not due at %v: %v", next, due)
	}
	if _, err := ns().Retry(ctx, "nope", at, next, 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retry of an unknown id: %v", err)
	}

	if tz, err := ns().Zone(ctx, 5); tz != "" || err != nil {
		t.Fatalf("zone of a chat without one: %q %v", tz, err)
	}
	if err := ns().SetZone(ctx, 5, "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	if tz, _ := ns().Zone(ctx, 5); tz != "Europe/Berlin" {
		t.Fatalf("zone: %q", tz)
	}
	if tz, _ := ns().Zone(ctx, 6); tz != "" {
		t.Fatalf("another chat sees the zone: %q", tz)
	}
	if err := ns().SetZone(ctx, 5, ""); err != nil {
		t.Fatal(err)
	}
	if tz, _ := ns().Zone(ctx, 5); tz != "" {
		t.Fatalf("cleared zone: %q", tz)
	}
}

// RetryFailed arms a failed one-shot goal with growing backoff until its
// maximum, and leaves alone recurring schedules, reminders, successes,
// cancellations and budget stops.
func TestRetryFailedBackoffAndLimits(t *testing.T) {
	ctx := context.Background()
	st := NewFile("")
	q := queue.NewMemory(queue.Options{})
	now := t0
	r := &Runner{Store: st, Queue: q, Now: func() time.Time { return now }}
	s, err := (&Service{Store: st, Now: func() time.Time { return now }}).Create(ctx, Owner{ChatID: 3, UserID: 3},
		Schedule{Spec: "in 1m", Text: "renew the domain", RetryMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	failed := queue.Result{Status: queue.StatusFailed, ExitCode: 1}
	var waits []time.Duration
	for i := 0; i < 4; i++ {
		due, _ := st.Get(ctx, s.ID)
		if !due.Enabled {
			break
		}
		now = due.Next
		if n, err := r.Tick(ctx); n != 1 || err != nil {
			t.Fatalf("fire %d: %d %v", i, n, err)
		}
		fired, _ := st.Get(ctx, s.ID)
		next, err := RetryFailed(ctx, st, BuildJob(fired, fired.Last), failed, now)
		if err != nil {
			t.Fatal(err)
		}
		if !next.IsZero() {
			waits = append(waits, next.Sub(now))
		}
	}
	if len(waits) != 2 || waits[0] != 30*time.Second || waits[1] != time.Minute {
		t.Fatalf("retry waits %v, want [30s 1m] (RetryMax 2)", waits)
	}
	if got, _ := st.Get(ctx, s.ID); got.Fires != 3 || got.Enabled || got.Retries != 2 {
		t.Fatalf("after the retries: fires %d enabled %v retries %d", got.Fires, got.Enabled, got.Retries)
	}

	// What is not retried.
	rec, _ := (&Service{Store: st, Now: func() time.Time { return now }}).Create(ctx, Owner{ChatID: 3}, Schedule{Spec: "every 1h", Text: "x"})
	msg, _ := (&Service{Store: st, Now: func() time.Time { return now }}).Create(ctx, Owner{ChatID: 3}, Schedule{Spec: "in 1m", Text: "x", Kind: KindMessage})
	for name, c := range map[string]struct {
		s   Schedule
		res queue.Result
	}{
		"recurring": {rec, failed},
		"reminder":  {msg, failed},
		"canceled":  {s, queue.Result{Status: queue.StatusCanceled}},
		"budget":    {s, queue.Result{Status: queue.StatusFailed, ExitCode: 4}},
		"succeeded": {s, queue.Result{Status: queue.StatusSucceeded}},
	} {
		next, err := RetryFailed(ctx, st, BuildJob(c.s, c.s.Next), c.res, now)
		if err != nil || !next.IsZero() {
			t.Errorf("%s: retried (%v %v)", name, next, err)
		}
	}
	if next, _ := RetryFailed(ctx, st, queue.Job{IdempotencyKey: "telegram:1:2"}, failed, now); !next.IsZero() {
		t.Error("a typed message's job was retried as a schedule")
	}
	if RetryBackoff(1) != 30*time.Second || RetryBackoff(3) != 5*time.Minute || RetryBackoff(9) != time.Hour {
		t.Error("backoff steps")
	}
}

// Confirm: a scheduled job's confirmations are denied as non_interactive
// unless the owner approved the tool ahead; the schedule tool never is.
func TestConfirmNonInteractive(t *testing.T) {
	q := "odek: allow shell (code_execution, argv0=curl)? [y/N] "
	if PromptTool(q) != "shell" {
		t.Fatalf("PromptTool %q", PromptTool(q))
	}
	if ok, err := Confirm(nil, q); ok || !errors.Is(err, ErrNonInteractive) || !strings.Contains(err.Error(), "non_interactive") {
		t.Fatalf("unapproved: %v %v", ok, err)
	}
	if ok, err := Confirm([]string{"shell"}, q); !ok || err != nil {
		t.Fatalf("approved ahead: %v %v", ok, err)
	}
	if ok, _ := Confirm([]string{"schedule"}, "odek: allow schedule (system_write, action=create)? [y/N] "); ok {
		t.Fatal("the schedule tool was confirmed for a scheduled job")
	}
	if ok, _ := Confirm([]string{"shell"}, "something else entirely"); ok {
		t.Fatal("a question naming no tool was confirmed")
	}
	if _, _, err := Prepare(Schedule{ChatID: 1, Spec: "every 1h", Text: "x", Approve: []string{"schedule"}}, Limits{}, t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("approving the schedule tool ahead: %v", err)
	}
	if _, _, err := Prepare(Schedule{ChatID: 1, Spec: "every 1h", Text: "x", Approve: []string{"sh ell"}}, Limits{}, t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a bad tool name: %v", err)
	}
	s, _, err := Prepare(Schedule{ChatID: 1, Spec: "every 1h", Text: "x", Approve: []string{"http_fetch"}}, Limits{}, t0)
	if err != nil || BuildJob(s, s.Next).Approved[0] != "http_fetch" {
		t.Fatalf("approved tools do not travel on the job: %v", err)
	}
}

// The per-user count and the chat's daily fires are enforced with errors
// that name the limit; an operator is not limited.
func TestServiceQuota(t *testing.T) {
	ctx := context.Background()
	sv := &Service{Store: NewFile(""), Now: func() time.Time { return t0 },
		Limits: Limits{MinInterval: time.Minute, MaxPerUser: 2, MaxDailyFires: 30}}
	alice := Owner{ChatID: 1, UserID: 1}
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "every 1h", Text: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err := sv.Create(ctx, alice, Schedule{Spec: "every 30m", Text: "b"})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "next 24 hours, over the limit of 30") {
		t.Fatalf("daily fires: %v", err)
	}
	if _, err := sv.Create(ctx, Owner{ChatID: 2, UserID: 1}, Schedule{Spec: "in 1h", Text: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sv.Create(ctx, Owner{ChatID: 3, UserID: 1}, Schedule{Spec: "in 1h", Text: "d"}); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "per user") {
		t.Fatalf("per user: %v", err)
	}
	if _, err := sv.Create(ctx, Owner{Operator: true}, Schedule{ChatID: 3, UserID: 1, Spec: "in 1h", Text: "d"}); err != nil {
		t.Fatalf("operator: %v", err)
	}
	if tz, err := sv.SetZone(ctx, alice, "Europe/Berlin"); tz != "Europe/Berlin" || err != nil {
		t.Fatalf("set zone: %q %v", tz, err)
	}
	if _, err := sv.SetZone(ctx, alice, "Mars/Olympus"); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("unknown zone: %v", err)
	}
}

func TestLimitsFromEnv(t *testing.T) {
	env := map[string]string{"ODEK_SCHEDULE_MIN_INTERVAL": "1s", "ODEK_SCHEDULE_MAX_PER_CHAT": "3"}
	lim, err := LimitsFromEnv(func(k string) string { return env[k] })
	if err != nil || lim.MinInterval != time.Second || lim.MaxPerChat != 3 {
		t.Fatalf("%+v %v", lim, err)
	}
	env["ODEK_SCHEDULE_MAX_DAILY_FIRES"] = "lots"
	if _, err := LimitsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "ODEK_SCHEDULE_MAX_DAILY_FIRES") {
		t.Fatalf("bad value: %v", err)
	}
}

// The embedded store keeps schedules in its bbolt file: they survive a
// close and reopen of the database (a restart of odek-bot).
func TestKVStoreSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "store.db")
	es, err := embedded.Open(p, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sv := &Service{Store: NewKV(es), Now: func() time.Time { return t0 }}
	s, err := sv.Create(ctx, Owner{ChatID: 4, UserID: 4}, Schedule{Spec: "in 1h", Text: "water the plants", Kind: KindMessage})
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.Store.SetZone(ctx, 4, "Asia/Tokyo"); err != nil {
		t.Fatal(err)
	}
	es.Close()
	es, err = embedded.Open(p, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	st := NewKV(es)
	got, err := st.Get(ctx, s.ID)
	if err != nil || got.Text != "water the plants" || !got.Enabled {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	if tz, _ := st.Zone(ctx, 4); tz != "Asia/Tokyo" {
		t.Fatalf("zone after reopen: %q", tz)
	}
}
