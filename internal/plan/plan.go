// Package plan is the state machine behind odek's built-in `plan` tool: a
// short list of steps the model creates, updates and completes while it
// works, shown back to it as a compact block before every model call.
//
// The decisions are pure: ParseArgs validates the tool's arguments and
// State.Apply turns a state and one verb into the next state plus a Change
// describing what happened (whether the version moved, which event the
// mutation maps to, whether three consecutive `blocked` transitions
// completed). Tool is the thin I/O wrapper the agent calls; it serialises
// mutations and emits plan_created / plan_updated / plan_blocked events
// carrying counts and the version only — never titles or notes, and no
// iteration (mutations happen inside parallel tool goroutines).
//
// Version rules: the version starts at 0 (no plan) and rises by exactly one
// on every effective change — create (also a wholesale replace), an update
// that changes at least one status or note (a note-only update counts),
// complete of a step not yet done. A call that changes nothing (get, an
// update to the values already held, complete of a done step) keeps the
// version and emits nothing, so the event stream's versions are gapless.
//
// Concurrency and ownership: State is a value; Apply never modifies its
// receiver's slices. A *Tool is safe for concurrent use; it owns its state
// for the life of one run.
package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Status is the state of one step.
type Status string

// Step statuses.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Done       Status = "done"
	Blocked    Status = "blocked"
)

func (s Status) valid() bool {
	switch s {
	case Pending, InProgress, Done, Blocked:
		return true
	}
	return false
}

// Verbs of the plan tool.
const (
	VerbCreate   = "create"
	VerbUpdate   = "update"
	VerbComplete = "complete"
	VerbGet      = "get"
)

// Limits on the model's input. Errors name the limit and the observed value.
const (
	// DefaultMaxSteps is the most steps a plan holds when Options.MaxSteps is 0.
	DefaultMaxSteps = 30
	// HardMaxSteps caps Options.MaxSteps.
	HardMaxSteps = 200
	// MaxIDBytes bounds a step id.
	MaxIDBytes = 64
	// MaxTitleChars bounds a step title, in characters.
	MaxTitleChars = 200
	// MaxNoteChars bounds a step note, in characters.
	MaxNoteChars = 500
	// MaxArgsBytes bounds the raw arguments of one call.
	MaxArgsBytes = 256 << 10
	// BlockedStreak is the number of consecutive transitions into blocked
	// that emits plan_blocked.
	BlockedStreak = 3
)

// ErrInvalidArgs is wrapped by every argument error; the text says what
// was expected.
var ErrInvalidArgs = errors.New("plan: invalid arguments")

// ErrNoPlan is returned for update and complete before any create.
var ErrNoPlan = errors.New("plan: no plan yet; call plan with verb \"create\" first")

// ErrUnknownStep is wrapped when an update or complete names a step the
// plan does not have.
var ErrUnknownStep = errors.New("plan: unknown step id")

// Step is one step of a plan.
type Step struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status Status `json:"status"`
	Note   string `json:"note,omitempty"`
}

// State is a plan and its version. The zero State has no plan (version 0).
type State struct {
	Version int
	Steps   []Step
	// streak counts consecutive transitions into blocked since the last
	// transition into any other status or the last plan_blocked.
	streak int
}

// Counts are the aggregate numbers plan events carry.
type Counts struct {
	Steps, Done, InProgress, Blocked, Pending int
}

// Counts tallies the steps by status.
func (s State) Counts() Counts {
	c := Counts{Steps: len(s.Steps)}
	for _, st := range s.Steps {
		switch st.Status {
		case Done:
			c.Done++
		case InProgress:
			c.InProgress++
		case Blocked:
			c.Blocked++
		default:
			c.Pending++
		}
	}
	return c
}

// Change is what one Apply did.
type Change struct {
	// Bumped reports an effective change: the version rose by one.
	Bumped bool
	// Created reports that the change was a create (maps to plan_created);
	// any other bump maps to plan_updated.
	Created bool
	// BlockedStreak reports that this change completed BlockedStreak
	// consecutive transitions into blocked (emit plan_blocked).
	BlockedStreak bool
}

// Apply returns the state after a, which ParseArgs accepted for the same
// limits. It never modifies s. An error leaves the state as it was: an
// update is applied atomically or not at all.
func (s State) Apply(a Args) (State, Change, error) {
	switch a.Verb {
	case VerbGet:
		return s, Change{}, nil
	case VerbCreate:
		steps := make([]Step, len(a.Steps))
		for i, sa := range a.Steps {
			steps[i] = Step{ID: sa.ID, Title: sa.Title, Status: Pending}
		}
		if s.Version > 0 && equalSteps(s.Steps, steps) {
			return s, Change{}, nil
		}
		return State{Version: s.Version + 1, Steps: steps}, Change{Bumped: true, Created: true}, nil
	case VerbComplete:
		st := Done
		a = Args{Verb: VerbUpdate, Updates: []Update{{ID: a.StepID, Status: &st}}}
		fallthrough
	case VerbUpdate:
		if s.Version == 0 {
			return s, Change{}, ErrNoPlan
		}
		index := make(map[string]int, len(s.Steps))
		for i, st := range s.Steps {
			index[st.ID] = i
		}
		for _, u := range a.Updates {
			if _, ok := index[u.ID]; !ok {
				return s, Change{}, fmt.Errorf("%w %q; the plan has: %s", ErrUnknownStep, u.ID, ids(s.Steps))
			}
		}
		next := State{Version: s.Version, Steps: append([]Step(nil), s.Steps...), streak: s.streak}
		changed, streakHit := false, false
		for _, u := range a.Updates {
			st := &next.Steps[index[u.ID]]
			if u.Status != nil && *u.Status != st.Status {
				st.Status = *u.Status
				changed = true
				if st.Status == Blocked {
					next.streak++
					if next.streak >= BlockedStreak {
						streakHit = true
						next.streak = 0
					}
				} else {
					next.streak = 0
				}
			}
			if u.Note != nil && *u.Note != st.Note {
				st.Note = *u.Note
				changed = true
			}
		}
		if !changed {
			return s, Change{}, nil
		}
		next.Version++
		return next, Change{Bumped: true, BlockedStreak: streakHit}, nil
	}
	return s, Change{}, fmt.Errorf("%w: verb %q: want create, update, complete or get", ErrInvalidArgs, a.Verb)
}

func equalSteps(a, b []Step) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ids(steps []Step) string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = strconv.Quote(s.ID)
	}
	return strings.Join(out, ", ")
}

// Block renders the plan for the model: one header line with the version
// and counts, then one line per step. "" when there is no plan. Notes are
// cut to 120 characters; the model reads the full note with verb get.
func (s State) Block() string {
	if s.Version == 0 {
		return ""
	}
	c := s.Counts()
	var b strings.Builder
	fmt.Fprintf(&b, "[odek plan v%d: %d steps — %d done, %d in progress, %d blocked, %d pending. Keep it current with the plan tool.]",
		s.Version, c.Steps, c.Done, c.InProgress, c.Blocked, c.Pending)
	for _, st := range s.Steps {
		b.WriteString("\n")
		b.WriteString(mark(st.Status))
		b.WriteString(" ")
		b.WriteString(st.ID)
		b.WriteString(": ")
		b.WriteString(st.Title)
		if st.Note != "" {
			b.WriteString(" — ")
			b.WriteString(clipChars(st.Note, 120))
		}
	}
	return b.String()
}

// Text renders the full plan (notes uncut) for the get verb.
func (s State) Text() string {
	if s.Version == 0 {
		return "no plan yet; create one with verb \"create\""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "plan v%d", s.Version)
	for _, st := range s.Steps {
		fmt.Fprintf(&b, "\n%s %s [%s]: %s", mark(st.Status), st.ID, st.Status, st.Title)
		if st.Note != "" {
			b.WriteString("\n    note: ")
			b.WriteString(st.Note)
		}
	}
	return b.String()
}

func mark(s Status) string {
	switch s {
	case Done:
		return "[x]"
	case InProgress:
		return "[>]"
	case Blocked:
		return "[!]"
	}
	return "[ ]"
}

func clipChars(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
