package scheduletool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/odekrun/odek/schedule"
)

// asker records the questions and answers with yes.
type asker struct {
	yes bool
	err error
	qs  []string
}

func (a *asker) Confirm(_ context.Context, q string) (bool, error) {
	a.qs = append(a.qs, q)
	return a.yes, a.err
}

func call(t *testing.T, tl *Tool, args string) (string, error) {
	t.Helper()
	if _, err := tl.Assess(json.RawMessage(args)); err != nil {
		return "", err
	}
	r, err := tl.Run(context.Background(), json.RawMessage(args))
	return r.Text, err
}

// On a real Redis store: create asks the chat first (with what, when and
// the next fire in the chat's zone) and makes nothing when the user says
// no; yes creates it for the job's chat and user. Another chat's tool sees
// none of it and cannot cancel it. A scheduled job's approver never says
// yes.
func TestToolConfirmsChangesAndStaysInItsChat(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	sv := &schedule.Service{Store: schedule.NewRedis(queuetest.StartRedis(t), ""), Now: func() time.Time { return now }}
	if _, err := sv.SetZone(ctx, schedule.Owner{ChatID: 1}, "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	no := &asker{}
	job := queue.Job{ChatID: 1, UserID: 11, Model: "m1"}
	create := `{"action":"create","when":"tomorrow 9:00","text":"renew the domain, odek.run","kind":"message"}`
	out, err := call(t, New(sv, job, no), create)
	if err != nil || !strings.Contains(out, "the user declined") {
		t.Fatalf("declined create: %q %v", out, err)
	}
	if l, _ := sv.List(ctx, schedule.Owner{ChatID: 1}); len(l) != 0 {
		t.Fatalf("a declined create made %d schedules", len(l))
	}
	q := no.qs[0]
	for _, want := range []string{"odek: allow schedule (schedule, ", "action=create", "kind=message", "next=Thu 3 Dec 09:00 CET", "text=renew the domain; odek.run"} {
		if !strings.Contains(q, want) {
			t.Errorf("question %q lacks %q", q, want)
		}
	}
	if schedule.PromptTool(q) != "schedule" {
		t.Errorf("question does not name the tool: %q", q)
	}

	yes := &asker{yes: true}
	out, err = call(t, New(sv, job, yes), create)
	if err != nil || !strings.HasPrefix(out, "Scheduled ") {
		t.Fatalf("confirmed create: %q %v", out, err)
	}
	l, _ := sv.List(ctx, schedule.Owner{ChatID: 1})
	if len(l) != 1 || l[0].UserID != 11 || l[0].Kind != schedule.KindMessage || l[0].TZ != "Europe/Berlin" || !l[0].Next.Equal(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)) || l[0].Model != "m1" {
		t.Fatalf("created %+v", l)
	}
	id := l[0].ID

	other := New(sv, queue.Job{ChatID: 2, UserID: 22}, &asker{yes: true})
	if out, _ := call(t, other, `{"action":"list"}`); out != "[]" {
		t.Fatalf("another chat lists %s", out)
	}
	if _, err := call(t, other, `{"action":"cancel","id":"`+id+`"}`); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("another chat cancels: %v", err)
	}
	if out, _ := call(t, New(sv, job, yes), `{"action":"list"}`); !strings.Contains(out, id) {
		t.Fatalf("own list %s", out)
	}

	// A scheduled job: its approver denies as non_interactive.
	sched := &asker{err: schedule.ErrNonInteractive}
	out, _ = call(t, New(sv, job, sched), `{"action":"create","when":"every 1h","text":"spawn more","kind":"goal"}`)
	if !strings.Contains(out, "scheduled job cannot change schedules") {
		t.Fatalf("from a scheduled job: %q", out)
	}
	// Nobody to ask: refused.
	if out, _ := call(t, New(sv, job, nil), create); !strings.Contains(out, "nobody can confirm") {
		t.Fatalf("without an approver: %q", out)
	}
	// Limits are checked before the user is asked.
	asked := &asker{yes: true}
	if _, err := call(t, New(sv, job, asked), `{"action":"create","when":"every 10s","text":"x"}`); !errors.Is(err, schedule.ErrLimit) || len(asked.qs) != 0 {
		t.Fatalf("too often: %v, asked %d", err, len(asked.qs))
	}
	if _, err := call(t, New(sv, job, yes), `{"action":"drop tables"}`); err == nil {
		t.Fatal("an unknown action was accepted")
	}
	if _, err := call(t, New(sv, job, yes), `{"action":"list","chat_id":2}`); err == nil {
		t.Fatal("a chat id in the arguments was accepted")
	}
	out, err = call(t, New(sv, job, yes), `{"action":"cancel","id":"`+id+`"}`)
	if err != nil || !strings.Contains(out, "cancel done") {
		t.Fatalf("cancel: %q %v", out, err)
	}
	if a, _ := New(sv, job, yes).Assess(json.RawMessage(`{"action":"create"}`)); a.Class != agent.ClassSafe {
		t.Fatalf("class %s", a.Class)
	}
}

// FuzzArgs: the model's arguments either parse to a known action and
// kind or are refused; nothing panics, and no argument names a chat.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{`{"action":"list"}`, `{"action":"create","when":"in 1m","text":"x"}`, `{"action":"cancel","id":"ab"}`,
		`{"action":"create","chat_id":2}`, `{"action":"nuke"}`, `[]`, `{"action":"create","kind":"shell"}`, `{"action":"list"}{"x":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := parse(json.RawMessage(raw))
		if err != nil {
			return
		}
		switch a.Action {
		case "create", "list", "cancel", "pause", "resume":
		default:
			t.Fatalf("%q: action %q accepted", raw, a.Action)
		}
		if a.Kind != "" && a.Kind != "message" && a.Kind != "goal" {
			t.Fatalf("%q: kind %q accepted", raw, a.Kind)
		}
	})
}
