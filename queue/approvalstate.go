package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/redis/go-redis/v9"
)

// Approvals that survive (issue 26, point 6). A front end that restarts
// while a question is open loses nothing it needs to settle it: the
// question itself (with the asking user and session), the messages that
// show it, and the "allow for this session" grants live in the queue, not
// in the front end's memory. ApprovalStates is that state; both queues
// (and the embedded store, a Memory) implement it.

// ApprovalPrompt is one message showing a question: in the asking chat or
// in an approver's private chat.
type ApprovalPrompt struct {
	ChatID    int64  `json:"chat_id"`
	MessageID int    `json:"message_id"`
	Lang      string `json:"lang,omitempty"`
}

// ApprovalStates is the queue-held state of approval questions.
type ApprovalStates interface {
	// PendingApproval returns question id while it is open (asked, not
	// answered, its deadline not passed); ErrNotFound otherwise.
	PendingApproval(ctx context.Context, id string) (Approval, error)
	// AddApprovalPrompt notes a message showing question id. The notes
	// are kept until an hour after the question's deadline (so a late
	// press can still close every copy), at most MaxApprovalPrompts.
	AddApprovalPrompt(ctx context.Context, id string, p ApprovalPrompt) error
	// ApprovalPrompts returns the messages noted for question id.
	ApprovalPrompts(ctx context.Context, id string) ([]ApprovalPrompt, error)
	// GrantSession allows, in session, every later question equal to
	// question (see SessionGrantable) for ttl.
	GrantSession(ctx context.Context, session, question string, ttl time.Duration) error
	// SessionGranted reports whether question is granted in session.
	SessionGranted(ctx context.Context, session, question string) (bool, error)
	// ExpiredApprovals hands out up to max questions whose deadline
	// passed without an answer, each with its prompt notes, each to one
	// caller only (across front ends), so that some front end closes the
	// prompts even when the one that showed them is gone.
	ExpiredApprovals(ctx context.Context, max int) ([]ExpiredApproval, error)
}

// ExpiredApproval is a question that expired unanswered and the messages
// that show it.
type ExpiredApproval struct {
	Approval Approval
	Prompts  []ApprovalPrompt
}

var (
	_ ApprovalStates = (*Redis)(nil)
	_ ApprovalStates = (*Memory)(nil)
)

// MaxApprovalPrompts bounds the messages noted per question (the asking
// chat and the approvers' private chats).
const MaxApprovalPrompts = 32

// SessionGrantTTL is how long an "allow for this session" grant lasts at
// most: the session's rest, bounded so the store does not keep grants of
// sessions nobody uses any more.
const SessionGrantTTL = 24 * time.Hour

// promptGrace is how long prompt notes outlive the question's deadline.
const promptGrace = time.Hour

// SessionGrantable reports whether "allow for this session" may be offered
// for question, and honoured: only a tool-policy question
// ("odek: allow <tool> (<class>, k=v, …)? [y/N]", which names the tool, its
// danger class and every field the policy shows — for the shell, the
// command line) whose fields are complete. A question with a clipped
// value ("…", e.g. a command line over 500 bytes) or a masked one
// ("[REDACTED]") is not: equal text would then not mean an equal call.
// A grant allows exactly that question text again, nothing broader. Pure.
func SessionGrantable(question string) bool {
	q := strings.TrimSpace(question)
	rest, ok := strings.CutPrefix(q, "odek: allow ")
	if !ok || !strings.HasSuffix(q, ")? [y/N]") || !strings.Contains(rest, " (") {
		return false
	}
	return !strings.Contains(q, "…") && !strings.Contains(q, "[REDACTED]") && !strings.ContainsAny(q, "\n\r")
}

// grantKey is the name of a grant: a hash of the session and the exact
// question (trimmed), so neither appears in the store's key space.
func grantKey(session, question string) string {
	h := sha256.New()
	h.Write([]byte(session))
	h.Write([]byte{0})
	h.Write([]byte(strings.TrimSpace(question)))
	return hex.EncodeToString(h.Sum(nil))
}

func checkGrant(session, question string) error {
	if session == "" || len(session) > MaxIDLen*2 {
		return fmt.Errorf("%w: grant session must be 1–%d bytes", ErrInvalidJob, MaxIDLen*2)
	}
	if !SessionGrantable(question) {
		return fmt.Errorf("%w: this question cannot be allowed for a session", ErrInvalidJob)
	}
	return nil
}

// ---- Memory ----

type memGrant struct{ until time.Time }

// PendingApproval implements ApprovalStates.
func (m *Memory) PendingApproval(ctx context.Context, id string) (Approval, error) {
	if err := ctx.Err(); err != nil {
		return Approval{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.openApprovalLocked(id)
	if p == nil {
		return Approval{}, ErrNotFound
	}
	return p.a, nil
}

// AddApprovalPrompt implements ApprovalStates.
func (m *Memory) AddApprovalPrompt(ctx context.Context, id string, pr ApprovalPrompt) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.openApprovalLocked(id)
	if p == nil {
		return ErrNotFound
	}
	if len(p.prompts) < MaxApprovalPrompts {
		p.prompts = append(p.prompts, pr)
	}
	return nil
}

// ApprovalPrompts implements ApprovalStates.
func (m *Memory) ApprovalPrompts(ctx context.Context, id string) ([]ApprovalPrompt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.approvalsLocked()[id]; p != nil {
		return append([]ApprovalPrompt(nil), p.prompts...), nil
	}
	return nil, nil
}

// GrantSession implements ApprovalStates.
func (m *Memory) GrantSession(ctx context.Context, session, question string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkGrant(session, question); err != nil {
		return err
	}
	ttl = min(max(ttl, time.Millisecond), SessionGrantTTL)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grants == nil {
		m.grants = map[string]memGrant{}
	}
	now := m.o.Now()
	for k, g := range m.grants { // forget expired grants
		if !now.Before(g.until) {
			delete(m.grants, k)
		}
	}
	m.grants[grantKey(session, question)] = memGrant{until: now.Add(ttl)}
	return nil
}

// SessionGranted implements ApprovalStates.
func (m *Memory) SessionGranted(ctx context.Context, session, question string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if session == "" || !SessionGrantable(question) {
		return false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.grants[grantKey(session, question)]
	return ok && m.o.Now().Before(g.until), nil
}

// ExpiredApprovals implements ApprovalStates.
func (m *Memory) ExpiredApprovals(ctx context.Context, max int) ([]ExpiredApproval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.o.Now()
	var out []ExpiredApproval
	for _, p := range m.approvalsLocked() {
		if !p.settled && !p.swept && !now.Before(p.a.Deadline) {
			p.swept = true
			out = append(out, ExpiredApproval{Approval: p.a, Prompts: append([]ApprovalPrompt(nil), p.prompts...)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Approval.Deadline.Before(out[j].Approval.Deadline) })
	if max > 0 && len(out) > max {
		for _, e := range out[max:] {
			m.approvalsLocked()[e.Approval.ID].swept = false // the next call's
		}
		out = out[:max]
	}
	return out, nil
}

// ---- Redis ----
//
// Keys (under the queue's prefix): approvalq:<id> the question's JSON,
// beside approval:<id> (its state, "pending" until answered, gone at the
// deadline), kept an hour past the deadline; approvalp:<id> a list of
// prompt notes, expiring an hour after the deadline; approvaldue a sorted
// set of the unanswered questions by deadline (ms), which Answer leaves
// and ExpiredApprovals pops; grant:<sha256(session, question)> "1" for a
// grant's ttl.

// PendingApproval implements ApprovalStates: the state and the question in
// one round trip.
func (r *Redis) PendingApproval(ctx context.Context, id string) (Approval, error) {
	if !validID(id) {
		return Approval{}, ErrNotFound
	}
	vals, err := r.c.MGet(ctx, r.key("approval:", id), r.key("approvalq:", id)).Result()
	if err != nil {
		return Approval{}, fmt.Errorf("queue: read approval %s: %w", id, err)
	}
	state, _ := vals[0].(string)
	raw, _ := vals[1].(string)
	if state != "pending" || raw == "" {
		return Approval{}, ErrNotFound
	}
	var a Approval
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return Approval{}, fmt.Errorf("queue: approval %s is unreadable: %w", id, err)
	}
	if !r.o.Now().Before(a.Deadline) {
		return Approval{}, ErrNotFound
	}
	return a, nil
}

// KEYS[1] prompt list, [2] question key; ARGV[1] note JSON, [2] max notes,
// [3] expiry (ms since the epoch).
var addPromptScript = &luascript.Script{Src: `
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('LLEN', KEYS[1]) < tonumber(ARGV[2]) then redis.call('RPUSH', KEYS[1], ARGV[1]) end
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
`}

// AddApprovalPrompt implements ApprovalStates.
func (r *Redis) AddApprovalPrompt(ctx context.Context, id string, p ApprovalPrompt) error {
	if !validID(id) {
		return ErrNotFound
	}
	a, err := r.PendingApproval(ctx, id)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(p)
	until := a.Deadline.Add(promptGrace).UnixMilli()
	n, err := addPromptScript.Run(ctx, r.c, []string{r.key("approvalp:", id), r.key("approvalq:", id)}, b, MaxApprovalPrompts, strconv.FormatInt(until, 10)).Int()
	if err != nil {
		return fmt.Errorf("queue: note approval prompt %s: %w", id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// ApprovalPrompts implements ApprovalStates.
func (r *Redis) ApprovalPrompts(ctx context.Context, id string) ([]ApprovalPrompt, error) {
	if !validID(id) {
		return nil, nil
	}
	raw, err := r.c.LRange(ctx, r.key("approvalp:", id), 0, MaxApprovalPrompts-1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("queue: read approval prompts %s: %w", id, err)
	}
	var out []ApprovalPrompt
	for _, s := range raw {
		var p ApprovalPrompt
		if json.Unmarshal([]byte(s), &p) == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// KEYS[1] the due set; ARGV[1] now (ms), [2] max, [3] forget-before (ms).
// Pops the due questions: each goes to one caller.
var popDueScript = &luascript.Script{Src: `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids > 0 then redis.call('ZREM', KEYS[1], unpack(ids)) end
return ids
`}

// ExpiredApprovals implements ApprovalStates.
func (r *Redis) ExpiredApprovals(ctx context.Context, max int) ([]ExpiredApproval, error) {
	if max <= 0 {
		max = 16
	}
	now := r.o.Now()
	ids, err := popDueScript.Run(ctx, r.c, []string{r.key("approvaldue")}, now.UnixMilli(), max, now.Add(-promptGrace).UnixMilli()).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("queue: pop expired approvals: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	p := r.c.Pipeline()
	qs := make([]*redis.StringCmd, len(ids))
	ps := make([]*redis.StringSliceCmd, len(ids))
	for i, id := range ids {
		qs[i] = p.Get(ctx, r.key("approvalq:", id))
		ps[i] = p.LRange(ctx, r.key("approvalp:", id), 0, MaxApprovalPrompts-1)
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("queue: read expired approvals: %w", err)
	}
	var out []ExpiredApproval
	for i := range ids {
		var e ExpiredApproval
		if json.Unmarshal([]byte(qs[i].Val()), &e.Approval) != nil {
			continue // past its grace: nothing left to close
		}
		for _, s := range ps[i].Val() {
			var pr ApprovalPrompt
			if json.Unmarshal([]byte(s), &pr) == nil {
				e.Prompts = append(e.Prompts, pr)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// GrantSession implements ApprovalStates.
func (r *Redis) GrantSession(ctx context.Context, session, question string, ttl time.Duration) error {
	if err := checkGrant(session, question); err != nil {
		return err
	}
	ttl = min(max(ttl, time.Millisecond), SessionGrantTTL)
	if err := r.c.Set(ctx, r.key("grant:", grantKey(session, question)), "1", ttl).Err(); err != nil {
		return fmt.Errorf("queue: grant for a session: %w", err)
	}
	return nil
}

// SessionGranted implements ApprovalStates.
func (r *Redis) SessionGranted(ctx context.Context, session, question string) (bool, error) {
	if session == "" || !SessionGrantable(question) {
		return false, nil
	}
	n, err := r.c.Exists(ctx, r.key("grant:", grantKey(session, question))).Result()
	if err != nil {
		return false, fmt.Errorf("queue: read a session grant: %w", err)
	}
	return n == 1, nil
}
