// Package schedule makes work start on a clock: cron, interval and one-shot
// schedules owned by a chat, stored beside the queue, fired exactly once
// across any number of processes.
//
// # Model
//
// A Schedule belongs to a chat (and the user who made it). Its Kind is
// KindGoal (run the agent on Text, as a typed message would) or KindMessage
// (deliver Text as a reminder, no model call). Its spec is parsed by
// ParseSpec (cron in a time zone through github.com/robfig/cron/v3, every
// <duration>, one-shot at). State — enabled, next and last fire, last
// status, counters — is kept by the Store.
//
// # Exactly once
//
// A fire is (schedule id, scheduled time). Any process may fire: Runner
// asks the Store for due schedules and Claims each one. Claim is a
// compare-and-set on the schedule's next fire time that, in one atomic
// step, moves next forward and records a pending fire with a lease. The
// process that won the claim enqueues the job with the idempotency key
// FireKey (sched:<id>:<unix ms>:<flags>) and then Completes the fire. A
// process that dies between claim and completion leaves the pending fire;
// its lease expires and another process (or the same after a restart)
// Reclaims it and enqueues again with the same key, which the queue
// deduplicates within its DedupeWindow. So a fire is neither lost nor
// doubled. docs/SCHEDULES.md has the full argument and the Redis keys.
//
// # Implementations
//
// Redis (NewRedis: keys under the queue's hash tag, every script declares
// its keys) for distributed mode; File (NewFile: one JSON file under an
// flock, or in memory with path "") for embedded mode. Both pass the same
// conformance tests.
//
// # Concurrency and ownership
//
// Stores, Runner and Service are safe for concurrent use. Values returned
// are owned by the caller.
package schedule

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/queue"
)

// Kind is what a fire does.
type Kind string

// Kinds.
const (
	KindGoal    Kind = "goal"    // run the agent on Text
	KindMessage Kind = "message" // deliver Text to the chat, no model call
)

// SessionMode is which conversation a fired goal continues.
type SessionMode string

// Session modes.
const (
	// SessionIsolated: every fire starts a fresh session of its own.
	SessionIsolated SessionMode = "isolated"
	// SessionChat: fires continue Schedule.SessionID (the chat's session).
	SessionChat SessionMode = "chat"
)

// MissedPolicy is what happens to fires missed while no process ran.
type MissedPolicy string

// Missed-fire policies.
const (
	// MissedSkip: fires more than the Runner's grace late are dropped
	// (counted as misses); the schedule resumes at its next time.
	MissedSkip MissedPolicy = "skip"
	// MissedRunOnce: one fire runs for all that were missed (scheduled at
	// the first missed time), then the schedule resumes.
	MissedRunOnce MissedPolicy = "run_once"
)

// FireStatus is the outcome of a schedule's last fire.
type FireStatus string

// Fire statuses.
const (
	StatusEnqueued FireStatus = "enqueued" // the job is in the queue
	StatusMissed   FireStatus = "missed"   // skipped: too late (MissedSkip)
	StatusInactive FireStatus = "inactive" // skipped: outside the active hours
	StatusBusy     FireStatus = "busy"     // skipped: a quiet check-in while its chat had a job
	StatusFailed   FireStatus = "failed"   // the queue refused the job (see LastError)
	// StatusBudget: skipped because the owner's budget (the chat's daily
	// budget or the user's caps, kept in the queue store) is spent; see
	// LastError for which and when it resets.
	StatusBudget FireStatus = "budget"
)

// Limits on schedule input and on how often schedules may fire. The zero
// value is usable: every field says what zero means.
type Limits struct {
	// MinInterval is the shortest time between two fires of one schedule;
	// 0 means DefaultMinInterval (1 min).
	MinInterval time.Duration
	// MaxTextBytes caps Text; 0 means 4096.
	MaxTextBytes int
	// MaxPerChat caps a chat's schedules (Service.Create); 0 means 50.
	MaxPerChat int
	// MaxPerUser caps the schedules one user made across chats
	// (Service.Create); 0 means 20.
	MaxPerUser int
	// MaxDailyFires caps how many fires a chat's schedules together make
	// in the next 24 hours, counted when one is created; 0 means 200.
	MaxDailyFires int
}

func (l Limits) withDefaults() Limits {
	if l.MinInterval <= 0 {
		l.MinInterval = DefaultMinInterval
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = 4096
	}
	if l.MaxPerChat <= 0 {
		l.MaxPerChat = 50
	}
	if l.MaxPerUser <= 0 {
		l.MaxPerUser = 20
	}
	if l.MaxDailyFires <= 0 {
		l.MaxDailyFires = 200
	}
	return l
}

// Schedule is one schedule: its definition and its state.
type Schedule struct {
	// ID is 16 hex digits, filled by Store.Create.
	ID     string `json:"id"`
	ChatID int64  `json:"chat_id"`
	UserID int64  `json:"user_id,omitempty"`
	Kind   Kind   `json:"kind"`
	// Spec is the spec text (ParseSpec's input; stored canonical) and TZ
	// its time zone ("" = UTC).
	Spec string `json:"spec"`
	TZ   string `json:"tz,omitempty"`
	// Text is the goal (KindGoal) or the reminder (KindMessage).
	Text    string      `json:"text"`
	Session SessionMode `json:"session,omitempty"`
	// SessionID is the session fires continue with SessionChat.
	SessionID string        `json:"session_id,omitempty"`
	Model     string        `json:"model,omitempty"`
	Budget    *queue.Budget `json:"budget,omitempty"`
	// Quiet marks a check-in: its answer reaches the chat only when the
	// model reports something (see QuietNothing).
	Quiet bool `json:"quiet,omitempty"`
	// ActiveHours ("08:00-20:00" in TZ; "" = always) skips fires outside.
	ActiveHours string       `json:"active_hours,omitempty"`
	Missed      MissedPolicy `json:"missed"`
	// Approve names the tools the owner approved ahead for this schedule's
	// jobs (queue.Job.Approved): a scheduled job cannot wait for a human,
	// so any other call that needs confirmation is denied as
	// non_interactive. The schedule tool itself can never be approved
	// ahead (a job must not plant schedules unseen).
	Approve []string `json:"approve,omitempty"`
	// RetryMax is how often a one-shot goal whose job failed is fired
	// again (with RetryBackoff between); 0 means DefaultRetries, -1 none.
	RetryMax int `json:"retry_max,omitempty"`
	// Lang is the owner's language of the notices the runner sends to
	// the chat ("de" or "" for English).
	Lang string `json:"lang,omitempty"`
	// Anchor is where an every spec's intervals start (creation time).
	Anchor    time.Time `json:"anchor"`
	CreatedAt time.Time `json:"created_at"`

	// State, kept by the Store.
	Enabled    bool       `json:"enabled"`
	Next       time.Time  `json:"next,omitzero"`
	Last       time.Time  `json:"last,omitzero"`
	LastStatus FireStatus `json:"last_status,omitempty"`
	LastJobID  string     `json:"last_job_id,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	Fires      int64      `json:"fires"`
	Misses     int64      `json:"misses"`
	// Retries counts the one-shot's fires again after a failed job.
	Retries int `json:"retries,omitempty"`
}

// Errors. Match with errors.Is.
var (
	ErrNotFound  = errors.New("schedule: not found")
	ErrInvalid   = errors.New("schedule: invalid schedule")
	ErrForbidden = errors.New("schedule: not the schedule's owner")
	ErrLimit     = errors.New("schedule: limit reached")
	// ErrConflict: the schedule changed under a compare-and-set (another
	// process claimed or edited it); read it again.
	ErrConflict = errors.New("schedule: changed concurrently")
)

func limitErr(have int) error {
	return fmt.Errorf("%w: the chat has %d schedules, the most allowed (delete one first)", ErrLimit, have)
}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// Prepare validates s against lim, canonicalises its spec, fills ID,
// CreatedAt, Anchor, the defaults (session isolated, missed skip), Enabled
// and the first Next after now. It returns the parsed spec too.
func Prepare(s Schedule, lim Limits, now time.Time) (Schedule, Spec, error) {
	lim = lim.withDefaults()
	if s.ChatID == 0 {
		return s, Spec{}, invalid("chat_id", "is 0")
	}
	switch s.Kind {
	case KindGoal, KindMessage:
	case "":
		s.Kind = KindGoal
	default:
		return s, Spec{}, invalid("kind", "%q: want goal or message", clip(string(s.Kind), 20))
	}
	if strings.TrimSpace(s.Text) == "" {
		return s, Spec{}, invalid("text", "is empty: a schedule needs a goal or a message")
	}
	if len(s.Text) > lim.MaxTextBytes || !utf8.ValidString(s.Text) {
		return s, Spec{}, invalid("text", "must be valid UTF-8 of at most %d bytes (got %d bytes)", lim.MaxTextBytes, len(s.Text))
	}
	switch s.Session {
	case "":
		s.Session = SessionIsolated
	case SessionIsolated:
	case SessionChat:
		if s.SessionID == "" {
			return s, Spec{}, invalid("session_id", "is empty: session mode chat needs the chat's session id")
		}
	default:
		return s, Spec{}, invalid("session", "%q: want isolated or chat", clip(string(s.Session), 20))
	}
	if len(s.SessionID) > queue.MaxIDLen || len(s.Model) > 128 {
		return s, Spec{}, invalid("session_id/model", "at most %d bytes each", queue.MaxIDLen)
	}
	switch s.Missed {
	case "":
		s.Missed = MissedSkip
	case MissedSkip, MissedRunOnce:
	default:
		return s, Spec{}, invalid("missed", "%q: want skip or run_once", clip(string(s.Missed), 20))
	}
	if err := s.Budget.Validate(); err != nil {
		return s, Spec{}, invalid("budget", "%v", err)
	}
	if _, _, err := parseActiveHours(s.ActiveHours); err != nil {
		return s, Spec{}, err
	}
	if err := validApprove(s.Approve); err != nil {
		return s, Spec{}, err
	}
	if s.RetryMax < -1 || s.RetryMax > MaxRetries {
		return s, Spec{}, invalid("retry_max", "%d: want -1 (none) to %d", s.RetryMax, MaxRetries)
	}
	sp, err := ParseSpec(s.Spec, s.TZ, now)
	if err != nil {
		return s, Spec{}, err
	}
	// A 5-field cron fires at most once a minute: probe its gaps only
	// when the limit is above that.
	if sp.Kind == KindEvery || (sp.Kind == KindCron && lim.MinInterval > time.Minute) {
		if mi := sp.MinInterval(now); mi < lim.MinInterval {
			return s, Spec{}, fmt.Errorf("%w: spec %q fires every %s, more often than the minimum interval of %s", ErrLimit, sp.Text, mi, lim.MinInterval)
		}
	}
	s.Spec, s.TZ = sp.Text, sp.TZ
	if s.ID == "" {
		s.ID = newID()
	}
	if !validID(s.ID) {
		return s, Spec{}, invalid("id", "%q: want 1..32 bytes of [a-z0-9-]", clip(s.ID, 40))
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now.UTC().Truncate(time.Millisecond)
	}
	if s.Anchor.IsZero() {
		s.Anchor = s.CreatedAt
	}
	s.Enabled = true
	s.Next = sp.Next(now, s.Anchor)
	if s.Next.IsZero() {
		return s, Spec{}, &SpecError{Field: "at", Value: sp.Text, Reason: "is in the past"}
	}
	return s, sp, nil
}

// ParsedSpec parses s's stored spec again.
func (s Schedule) ParsedSpec() (Spec, error) {
	return ParseSpec(s.Spec, s.TZ, s.CreatedAt)
}

func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func validID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// parseActiveHours reads "HH:MM-HH:MM" as minutes of the day; "" is
// always active (0, 0). to < from wraps past midnight.
func parseActiveHours(s string) (from, to int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	bad := invalid("active_hours", "%q: want HH:MM-HH:MM, e.g. 08:00-20:00", clip(s, 20))
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, bad
	}
	parse := func(x string) (int, bool) {
		t, err := time.Parse("15:04", x)
		if err != nil {
			return 0, false
		}
		return t.Hour()*60 + t.Minute(), true
	}
	f, ok1 := parse(a)
	t, ok2 := parse(b)
	if !ok1 || !ok2 || f == t {
		return 0, 0, bad
	}
	return f, t, nil
}

// Active reports whether t falls in s's active hours (in s's time zone).
func (s Schedule) Active(t time.Time) bool {
	from, to, err := parseActiveHours(s.ActiveHours)
	if err != nil || from == to {
		return err == nil
	}
	loc, err := LoadZone(s.TZ)
	if err != nil {
		return true
	}
	lt := t.In(loc)
	m := lt.Hour()*60 + lt.Minute()
	if from < to {
		return m >= from && m < to
	}
	return m >= from || m < to
}

// QuietNothing is what a quiet check-in's answer starts with when there is
// nothing to report; a worker that sees it on a quiet fire (FireInfo.Quiet)
// delivers nothing. The fired goal tells the model so (quietSuffix).
const QuietNothing = "NOTHING_TO_REPORT"

const quietSuffix = "\n\n(This is a scheduled quiet check-in. If there is nothing that needs the user's attention, answer with exactly " + QuietNothing + " and nothing else.)"

// QuietSilent reports whether a quiet check-in's answer says there is
// nothing to report.
func QuietSilent(answer string) bool {
	return strings.HasPrefix(strings.TrimSpace(answer), QuietNothing)
}
