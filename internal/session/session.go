// Package session persists agent conversations so a run can be resumed
// (`odek run --session`, `odek continue`), and carries the
// external-state refs attached to them (EXTENSIONS.md "External-state-ref
// schema").
//
// A Session is plain data. Store is the small interface the CLI and workers
// use; FileStore keeps one JSON file per session under a directory
// (~/.odek/sessions for the CLI) and a Redis-backed store can implement the
// same interface. The behaviour every Store must show is written once, in
// package sessiontest.
//
// Session ids are 128 random bits as 32 lowercase hex characters (NewID);
// every id that reaches a Store is checked by ValidateID, so an id can never
// name a path outside the store. Refs are validated (ExternalRef.Validate)
// and never dereferenced.
//
// Concurrency and ownership: FileStore is safe for concurrent use; each
// Save replaces the file atomically, so a reader sees the old or the new
// session, never a mix. Save reads the *Session it is given (stamping its
// CreatedAt and UpdatedAt) and retains nothing; the caller must not mutate
// it during the call. Load returns a fresh *Session owned by the caller.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/odekrun/odek/internal/llm"
)

// Sentinel errors.
var (
	// ErrNotFound: no session with that id (or no session at all, for Latest).
	ErrNotFound = errors.New("session: not found")
	// ErrInvalidID: the id is not 32 lowercase hex characters.
	ErrInvalidID = errors.New("session: invalid session id")
	// ErrCorrupt: a stored session could not be decoded or breaks a limit.
	ErrCorrupt = errors.New("session: corrupt session data")
)

// IDLen is the length of a session id: 128 bits in lowercase hex.
const IDLen = 32

// Session is one persisted conversation.
type Session struct {
	// ID is 32 lowercase hex characters (NewID).
	ID string `json:"id"`
	// CreatedAt is stamped by Store.Save when zero.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is stamped by Store.Save on every save.
	UpdatedAt time.Time `json:"updated_at"`
	// Model is the model id the conversation ran with.
	Model string `json:"model,omitempty"`
	// Messages is the conversation without the system prompt. After a
	// compaction its second message is the conversation's digest (a system
	// message starting with agent.DigestMarker, agent.IsDigest), so the
	// digest is saved, and continued, with the session.
	Messages []llm.Message `json:"messages"`
	// ExternalRefs are operator-supplied pointers to outside state.
	ExternalRefs []ExternalRef `json:"external_refs,omitempty"`
	// Plan is the plan tool's state at the last save (internal/plan's
	// Saved form), so a continued conversation keeps its plan. Opaque
	// here; absent when the model made no plan.
	Plan json.RawMessage `json:"plan,omitempty"`
}

// New returns an empty session with a fresh id.
func New(model string, now time.Time) *Session {
	return &Session{ID: NewID(), CreatedAt: now.UTC(), UpdatedAt: now.UTC(), Model: model}
}

// Summary describes a stored session without its messages.
type Summary struct {
	ID           string    `json:"id"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	Model        string    `json:"model,omitempty"`
	MessageCount int       `json:"message_count"`
	// Goal is the start of the first user message, at most GoalPreviewChars
	// characters.
	Goal string `json:"goal,omitempty"`
}

// GoalPreviewChars bounds Summary.Goal, in characters.
const GoalPreviewChars = 80

// Summarize returns the Summary of s.
func Summarize(s *Session) Summary {
	sum := Summary{ID: s.ID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Model: s.Model, MessageCount: len(s.Messages)}
	for _, m := range s.Messages {
		if m.Role == llm.RoleUser {
			sum.Goal = preview(m.Content, GoalPreviewChars)
			break
		}
	}
	return sum
}

func preview(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Store persists sessions. Implementations validate ids with ValidateID and
// return errors wrapping ErrInvalidID, ErrNotFound or ErrCorrupt; they stop
// early with ctx.Err() when ctx is done.
type Store interface {
	// Save writes s, replacing any session with the same id atomically.
	// It stamps s.CreatedAt when zero and s.UpdatedAt always.
	Save(ctx context.Context, s *Session) error
	// Load reads the session with that id.
	Load(ctx context.Context, id string) (*Session, error)
	// Latest reads the most recently saved session.
	Latest(ctx context.Context) (*Session, error)
	// List returns the summaries of all sessions, most recently saved first.
	List(ctx context.Context) ([]Summary, error)
	// Delete removes the session with that id.
	Delete(ctx context.Context, id string) error
}

// NewID returns 128 random bits as 32 lowercase hex characters.
func NewID() string {
	var b [IDLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ValidateID accepts exactly 32 lowercase hex characters, so an id can
// never carry a path separator, a dot, NUL or any other surprise.
func ValidateID(id string) error {
	if len(id) != IDLen {
		return fmt.Errorf("%w: %d bytes, want %d lowercase hex characters", ErrInvalidID, len(id), IDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%w: byte %d is %q, want lowercase hex", ErrInvalidID, i, c)
		}
	}
	return nil
}

// Validate checks the id and every external ref of s.
func (s *Session) Validate() error {
	if err := ValidateID(s.ID); err != nil {
		return err
	}
	for i, r := range s.ExternalRefs {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("external_refs[%d]: %w", i, err)
		}
	}
	return nil
}
