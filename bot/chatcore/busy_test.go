package chatcore

import (
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

func TestParseBusy(t *testing.T) {
	for in, want := range map[string]Busy{"": BusyQueue, "queue": BusyQueue, " Steer ": BusySteer, "INTERRUPT": BusyInterrupt} {
		if got, err := ParseBusy(in); err != nil || got != want {
			t.Errorf("ParseBusy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseBusy("drop"); err == nil {
		t.Error("ParseBusy(drop) accepted an unknown policy")
	}
}

func TestDecideBusy(t *testing.T) {
	running := BusyCase{Unfinished: 1, Steerable: true, SameSession: true, SameUser: true}
	with := func(p Busy, f func(*BusyCase)) BusyCase {
		c := running
		c.Policy = p
		if f != nil {
			f(&c)
		}
		return c
	}
	for name, tc := range map[string]struct {
		c    BusyCase
		want BusyAction
	}{
		"idle starts":                    {BusyCase{Policy: BusySteer}, BusyStart},
		"queue policy queues":            {with(BusyQueue, nil), BusyEnqueue},
		"steer policy steers":            {with(BusySteer, nil), BusySteerIn},
		"steer without queue support":    {with(BusySteer, func(c *BusyCase) { c.Steerable = false }), BusyEnqueue},
		"steer with pictures":            {with(BusySteer, func(c *BusyCase) { c.Images = true }), BusyEnqueue},
		"steer into another's session":   {with(BusySteer, func(c *BusyCase) { c.SameSession = false }), BusyEnqueue},
		"steer past waiting requests":    {with(BusySteer, func(c *BusyCase) { c.Held = 1 }), BusyEnqueue},
		"steer past queued jobs":         {with(BusySteer, func(c *BusyCase) { c.Unfinished = 2 }), BusyEnqueue},
		"edited message":                 {with(BusySteer, func(c *BusyCase) { c.Edited = true }), BusyEnqueue},
		"only held, nothing running":     {BusyCase{Policy: BusySteer, Held: 1, Steerable: true, SameSession: true}, BusyEnqueue},
		"interrupt own job":              {with(BusyInterrupt, nil), BusyInterruptIt},
		"interrupt another member's job": {with(BusyInterrupt, func(c *BusyCase) { c.SameUser = false }), BusyEnqueue},
		"interrupt in a private chat":    {with(BusyInterrupt, func(c *BusyCase) { c.SameUser, c.Private = false, true }), BusyInterruptIt},
	} {
		if got := DecideBusy(tc.c); got != tc.want {
			t.Errorf("%s: DecideBusy(%+v) = %d, want %d", name, tc.c, got, tc.want)
		}
	}
}

func TestInterruptedResultSaysSo(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	res := queue.Result{Status: queue.StatusCanceled, Answer: "half done"}
	pl := PlanResult(Policy{}, res, Finished{Lang: "de", Interrupted: true}, Usage{}, 0, now)
	if pl.Head != Tr("de", "busy.interrupted") || pl.Answer != "half done" {
		t.Fatalf("plan of an interrupted job: head %q, answer %q", pl.Head, pl.Answer)
	}
	if pl := PlanResult(Policy{}, res, Finished{Lang: "en"}, Usage{}, 0, now); pl.Head != Tr("en", "stopped") {
		t.Fatalf("a job stopped with /stop says %q", pl.Head)
	}
}
