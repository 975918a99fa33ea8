package schedule

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

func TestServiceOwnerChecks(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: t0}
	cq := newCount(queue.NewMemory(queue.Options{}))
	sv := &Service{Store: NewFile(""), Queue: cq, Now: clk.Now, Limits: Limits{MaxPerChat: 3}}
	alice := Owner{ChatID: -100, UserID: 1}
	bob := Owner{ChatID: -100, UserID: 2}
	mallory := Owner{ChatID: 666, UserID: 3}
	admin := Owner{ChatID: -100, UserID: 4, Admin: true}
	// The chat and user come from the owner, not from the request.
	s, err := sv.Create(ctx, alice, Schedule{ChatID: 666, UserID: 3, Spec: "0 9 * * 1-5", TZ: "Europe/Berlin", Text: "summarise the open issues"})
	if err != nil {
		t.Fatal(err)
	}
	if s.ChatID != -100 || s.UserID != 1 || s.Session != SessionIsolated || s.Missed != MissedSkip || !s.Enabled {
		t.Fatalf("created %+v", s)
	}
	if l, _ := sv.List(ctx, mallory); len(l) != 0 {
		t.Fatalf("another chat lists %v", l)
	}
	// Another chat cannot see or touch it: it is not found there.
	for name, f := range map[string]func() error{
		"get":    func() error { _, err := sv.Get(ctx, mallory, s.ID); return err },
		"pause":  func() error { _, err := sv.Pause(ctx, mallory, s.ID); return err },
		"resume": func() error { _, err := sv.Resume(ctx, mallory, s.ID); return err },
		"delete": func() error { return sv.Delete(ctx, mallory, s.ID) },
		"run":    func() error { _, err := sv.RunNow(ctx, mallory, s.ID); return err },
	} {
		if err := f(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s by another chat: %v, want ErrNotFound", name, err)
		}
	}
	// Another member of the group sees it but may not change it.
	if _, err := sv.Get(ctx, bob, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := sv.Pause(ctx, bob, s.ID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("pause by another member: %v", err)
	}
	if err := sv.Delete(ctx, bob, s.ID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("delete by another member: %v", err)
	}
	// The maker and a chat admin may.
	if p, err := sv.Pause(ctx, admin, s.ID); err != nil || p.Enabled {
		t.Fatalf("pause by an admin: %+v %v", p, err)
	}
	clk.Set(t0.Add(72 * time.Hour)) // Saturday 5 December, 10:00 UTC
	r, err := sv.Resume(ctx, alice, s.ID)
	if err != nil || !r.Enabled || !r.Next.Equal(time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("resume: %+v %v (want Monday 09:00 Berlin)", r, err)
	}
	id, err := sv.RunNow(ctx, alice, s.ID)
	if err != nil || cq.total() != 1 || !strings.HasPrefix(id, "sched-"+s.ID+"-") {
		t.Fatalf("run now: %q %v, %d jobs", id, err, cq.total())
	}
	after, _ := sv.Get(ctx, alice, s.ID)
	if !after.Next.Equal(r.Next) || after.Fires != 1 || after.LastJobID != id {
		t.Fatalf("run now moved next or did not record: %+v", after)
	}
	// Limits.
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "every 30s", Text: "x"}); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "minimum interval of 1m0s") {
		t.Fatalf("every 30s: %v", err)
	}
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "* * * * *", Text: strings.Repeat("x", 4097)}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "text") {
		t.Fatalf("long text: %v", err)
	}
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "at 2026-12-01T00:00:00Z", Text: "x"}); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "past") {
		t.Fatalf("past at: %v", err)
	}
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "every 1h", Text: "x", Kind: "shell"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "kind") {
		t.Fatalf("bad kind: %v", err)
	}
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "every 1h", Text: "x", Session: SessionChat}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "session_id") {
		t.Fatalf("chat session without id: %v", err)
	}
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "every 1h", Text: "x", ActiveHours: "9-5"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "active_hours") {
		t.Fatalf("bad active hours: %v", err)
	}
	if _, err := sv.Create(ctx, alice, Schedule{Spec: "every 1h", Text: "x", Budget: &queue.Budget{MaxToolCalls: -1}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "max_tool_calls") {
		t.Fatalf("bad budget: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := sv.Create(ctx, bob, Schedule{Spec: "every 1h", Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sv.Create(ctx, bob, Schedule{Spec: "every 1h", Text: "x"}); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "3 schedules") {
		t.Fatalf("fourth schedule of a chat with MaxPerChat 3: %v", err)
	}
	// A one-shot whose time passed cannot resume.
	one, err := sv.Create(ctx, mallory, Schedule{Spec: "in 1h", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = sv.Pause(ctx, mallory, one.ID)
	clk.Add(2 * time.Hour)
	if _, err := sv.Resume(ctx, mallory, one.ID); !errors.Is(err, ErrInvalid) {
		t.Fatalf("resume of a passed one-shot: %v", err)
	}
	if err := sv.Delete(ctx, alice, s.ID); err != nil {
		t.Fatal(err)
	}
	// The operator sees every chat.
	if l, _ := sv.List(ctx, Owner{Operator: true}); len(l) != 3 {
		t.Fatalf("operator list: %d", len(l))
	}
}

func TestBuildJob(t *testing.T) {
	s := Schedule{ID: "abc", ChatID: 5, UserID: 6, Kind: KindGoal, Text: "look", Quiet: true, Model: "m", Session: SessionIsolated}
	at := time.UnixMilli(1764669600000)
	j := BuildJob(s, at)
	if j.ID != "sched-abc-1764669600000" || j.IdempotencyKey != "sched:abc:1764669600000:gq" || !strings.Contains(j.Goal, QuietNothing) ||
		j.SessionID != "sched:abc:1764669600000" || j.Model != "m" || !j.CreatedAt.Equal(at) {
		t.Fatalf("%+v", j)
	}
	s.Session, s.SessionID = SessionChat, "telegram:5"
	if j := BuildJob(s, at); j.SessionID != "telegram:5" {
		t.Fatalf("chat session: %q", j.SessionID)
	}
	if !QuietSilent("  NOTHING_TO_REPORT") || QuietSilent("The build broke. NOTHING_TO_REPORT") {
		t.Fatal("QuietSilent")
	}
}

func TestPrepareCronUnderAnOperatorMinimum(t *testing.T) {
	lim := Limits{MinInterval: 10 * time.Minute}
	if _, _, err := Prepare(Schedule{ChatID: 1, Spec: "*/5 * * * *", Text: "x"}, lim, t0); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "5m0s") {
		t.Fatalf("*/5 under a 10m minimum: %v", err)
	}
	if _, _, err := Prepare(Schedule{ChatID: 1, Spec: "0,59 0,23 * * *", Text: "x"}, lim, t0); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "1m0s") {
		t.Fatalf("a one-minute gap across midnight: %v", err)
	}
	if _, _, err := Prepare(Schedule{ChatID: 1, Spec: "*/15 * * * *", Text: "x"}, lim, t0); err != nil {
		t.Fatal(err)
	}
}
