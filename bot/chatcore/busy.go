package chatcore

import (
	"fmt"
	"strings"
)

// Busy is a chat's policy for a message that arrives while one of its
// jobs is unfinished (issue 26): queue it as a job of its own (the
// default), steer it into the running job, or interrupt the running job
// and run the new message instead.
type Busy string

// Busy policies.
const (
	BusyQueue     Busy = "queue"
	BusySteer     Busy = "steer"
	BusyInterrupt Busy = "interrupt"
)

// ParseBusy reads a busy policy ("" = BusyQueue), case-insensitively; an
// unknown word is an error naming the allowed ones.
func ParseBusy(s string) (Busy, error) {
	switch b := Busy(strings.ToLower(strings.TrimSpace(s))); b {
	case "":
		return BusyQueue, nil
	case BusyQueue, BusySteer, BusyInterrupt:
		return b, nil
	}
	return "", fmt.Errorf("busy policy must be queue, steer or interrupt, got %q", clipWord(s, 20))
}

func clipWord(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// BusyCase is what the chat knows when a request arrives.
type BusyCase struct {
	Policy     Busy
	Unfinished int  // the chat's unfinished jobs (the first one runs or is next)
	Held       int  // requests waiting in the chat, not yet jobs
	Steerable  bool // the queue carries steered messages (queue.Steering)
	Images     bool // the request carries pictures (they travel only on a job)
	Edited     bool // an edit of an earlier message (its own path supersedes the old job)
	// SameSession: the first unfinished job continues the conversation the
	// request joins (in a group with a session per member, another
	// member's job does not); SameUser: the same person asked for it.
	SameSession, SameUser bool
	Private               bool // a private chat (one person)
}

// BusyAction is what happens to the request.
type BusyAction int

// Busy actions.
const (
	BusyStart       BusyAction = iota // nothing unfinished: it becomes a job at once
	BusyEnqueue                       // it waits as a job of its own (receipt: "Queued — position n")
	BusySteerIn                       // it joins the running job (receipt: "Added to the running job")
	BusyInterruptIt                   // the running job stops and the request runs next (receipt: "Stopping…")
)

// DecideBusy decides what a request does when the chat is busy. A steer
// needs a queue that carries it, a request without pictures, the same
// conversation and nothing else waiting (steering past waiting requests
// would answer out of order); an interrupt stops only a job of the same
// person, or any job in a private chat. Otherwise the request is queued.
// Pure.
func DecideBusy(c BusyCase) BusyAction {
	if c.Unfinished == 0 && c.Held == 0 {
		return BusyStart
	}
	if c.Edited || c.Unfinished == 0 {
		return BusyEnqueue
	}
	switch c.Policy {
	case BusySteer:
		if c.Steerable && !c.Images && c.SameSession && c.Unfinished == 1 && c.Held == 0 {
			return BusySteerIn
		}
	case BusyInterrupt:
		if c.SameUser || c.Private {
			return BusyInterruptIt
		}
	}
	return BusyEnqueue
}

// busyTexts are the texts of the busy policy, in English and German.
var busyTexts = map[string]map[string]string{
	"en": {
		"busy.show": "While a job runs, new messages are: %s.\n" +
			"/busy queue — each waits and runs as its own job (default)\n" +
			"/busy steer — it joins the running job at its next step; the answer covers it\n" +
			"/busy interrupt — the running job stops (its work so far stays in the conversation) and the new message runs",
		"busy.queue":       "queued as their own jobs",
		"busy.steer":       "steered into the running job",
		"busy.interrupt":   "run at once, interrupting the running job",
		"busy.set":         "✅ From now on, messages sent while a job runs are %s.",
		"busy.bad":         "Unknown choice %q: use /busy queue, /busy steer or /busy interrupt.",
		"rc.steered":       "↪ Added to the running job: its answer covers this message too.",
		"rc.interrupting":  "⏹ Stopping the running job (what it did so far stays in the conversation); your new message runs next.",
		"busy.interrupted": "⏹ Interrupted by a newer message; what the job did so far stays in the conversation.",
	},
	"de": {
		"busy.show": "Während ein Auftrag läuft, werden neue Nachrichten: %s.\n" +
			"/busy queue — jede wartet und läuft als eigener Auftrag (Standard)\n" +
			"/busy steer — sie fließt beim nächsten Schritt in den laufenden Auftrag ein; die Antwort berücksichtigt sie\n" +
			"/busy interrupt — der laufende Auftrag stoppt (seine bisherige Arbeit bleibt im Gespräch) und die neue Nachricht läuft",
		"busy.queue":       "als eigene Aufträge eingereiht",
		"busy.steer":       "in den laufenden Auftrag gelenkt",
		"busy.interrupt":   "sofort ausgeführt, der laufende Auftrag wird unterbrochen",
		"busy.set":         "✅ Ab jetzt werden Nachrichten, die während eines Auftrags kommen, %s.",
		"busy.bad":         "Unbekannte Wahl %q: nutze /busy queue, /busy steer oder /busy interrupt.",
		"rc.steered":       "↪ Zum laufenden Auftrag hinzugefügt: seine Antwort berücksichtigt auch diese Nachricht.",
		"rc.interrupting":  "⏹ Der laufende Auftrag wird gestoppt (seine bisherige Arbeit bleibt im Gespräch); deine neue Nachricht läuft als Nächstes.",
		"busy.interrupted": "⏹ Von einer neueren Nachricht unterbrochen; die bisherige Arbeit des Auftrags bleibt im Gespräch.",
	},
}
