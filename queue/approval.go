package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/redis/go-redis/v9"
)

// Approval is a question a worker asks the chat of a running job (a tool
// call the danger policy marks "prompt"). It is the wire format of the
// approvals stream (JSON).
type Approval struct {
	// ID is filled by Ask: 32 random hex digits.
	ID     string `json:"id"`
	JobID  string `json:"job_id"`
	ChatID int64  `json:"chat_id"`
	// Question is the text shown to the chat; it must not be empty.
	Question string `json:"question"`
	// Deadline is when the worker stops waiting and denies. Ask fills a
	// zero Deadline with now + DefaultApprovalTimeout.
	Deadline time.Time `json:"deadline"`
	// UserID is the user who asked for the job (queue.Job.UserID), who
	// may answer besides the front end's named approvers; 0 = unknown.
	UserID int64 `json:"user_id,omitempty"`
	// SessionID is the job's conversation (queue.Job.SessionID), the
	// scope of an "allow for this session" grant; "" = none offered.
	SessionID string `json:"session_id,omitempty"`
}

// DefaultApprovalTimeout is the wait of an Approval without a Deadline.
const DefaultApprovalTimeout = 30 * time.Minute

// MaxQuestionBytes caps Approval.Question.
const MaxQuestionBytes = 4 << 10

// Approvals carries questions from workers to front ends and the answers
// back. Both queues implement it. A question is handed to one front-end
// consumer at most once (a question lost with its front end times out, and
// a timeout denies: fail closed); the first answer wins.
type Approvals interface {
	// Ask publishes a and returns it with ID and Deadline filled.
	Ask(ctx context.Context, a Approval) (Approval, error)
	// AwaitAnswer waits up to block for the answer to approval id. ok is
	// false when no answer came in that time.
	AwaitAnswer(ctx context.Context, id string, block time.Duration) (allow, ok bool, err error)
	// ReadApprovals returns questions for this front-end consumer whose
	// deadline has not passed, waiting up to block for one.
	ReadApprovals(ctx context.Context, consumer string, max int, block time.Duration) ([]Approval, error)
	// Answer records the chat's answer. ErrNotFound when the question is
	// unknown, already answered or past its deadline.
	Answer(ctx context.Context, id string, allow bool) error
}

var (
	_ Approvals = (*Redis)(nil)
	_ Approvals = (*Memory)(nil)
)

// prepareApproval validates a and fills its ID and Deadline.
func prepareApproval(a Approval, now time.Time) (Approval, []byte, error) {
	a.ID = newID()
	if !validID(a.JobID) {
		return a, nil, fmt.Errorf("%w: approval job_id %q", ErrInvalidJob, clip(a.JobID, 40))
	}
	if a.Question == "" || !utf8.ValidString(a.Question) {
		return a, nil, fmt.Errorf("%w: approval question must be non-empty UTF-8", ErrInvalidJob)
	}
	if len(a.Question) > MaxQuestionBytes {
		return a, nil, &PayloadTooLargeError{What: "approval question", Limit: MaxQuestionBytes, Size: len(a.Question)}
	}
	if len(a.SessionID) > 2*MaxIDLen {
		return a, nil, fmt.Errorf("%w: approval session_id longer than %d bytes", ErrInvalidJob, 2*MaxIDLen)
	}
	if a.Deadline.IsZero() {
		a.Deadline = now.Add(DefaultApprovalTimeout)
	}
	a.Deadline = a.Deadline.UTC()
	b, err := json.Marshal(a)
	return a, b, err
}

// ---- Memory ----

type memApproval struct {
	a       Approval
	read    bool
	answer  chan bool // buffered 1; closed never
	settled bool
	prompts []ApprovalPrompt // approvalstate.go
	swept   bool             // handed out by ExpiredApprovals
}

func (m *Memory) approvalsLocked() map[string]*memApproval {
	if m.approvals == nil {
		m.approvals = map[string]*memApproval{}
	}
	return m.approvals
}

// Ask implements Approvals.
func (m *Memory) Ask(ctx context.Context, a Approval) (Approval, error) {
	if err := ctx.Err(); err != nil {
		return a, err
	}
	a, _, err := prepareApproval(a, m.o.Now())
	if err != nil {
		return a, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	aps := m.approvalsLocked()
	now := m.o.Now()
	for id, p := range aps { // forget old questions (their prompt notes with them)
		if now.Sub(p.a.Deadline) > promptGrace {
			delete(aps, id)
		}
	}
	aps[a.ID] = &memApproval{a: a, answer: make(chan bool, 1)}
	m.notifyLocked()
	return a, nil
}

// AwaitAnswer implements Approvals.
func (m *Memory) AwaitAnswer(ctx context.Context, id string, block time.Duration) (bool, bool, error) {
	m.mu.Lock()
	p := m.approvalsLocked()[id]
	m.mu.Unlock()
	if p == nil {
		return false, false, ErrNotFound
	}
	t := time.NewTimer(max(block, 0))
	defer t.Stop()
	select {
	case v := <-p.answer:
		return v, true, nil
	case <-t.C:
		return false, false, nil
	case <-ctx.Done():
		return false, false, ctx.Err()
	}
}

// ReadApprovals implements Approvals.
func (m *Memory) ReadApprovals(ctx context.Context, consumer string, max int, block time.Duration) ([]Approval, error) {
	if max <= 0 {
		max = 1
	}
	return waitFor(ctx, m, block, func() []Approval {
		now := m.o.Now()
		var out []Approval
		for _, p := range m.approvalsLocked() {
			if len(out) < max && !p.read && now.Before(p.a.Deadline) {
				p.read = true
				out = append(out, p.a)
			}
		}
		return out
	})
}

// openApprovalLocked is the question id while it can still be answered
// (asked, not settled, before its deadline), else nil; m.mu is held.
func (m *Memory) openApprovalLocked(id string) *memApproval {
	p := m.approvalsLocked()[id]
	if p == nil || p.settled || !m.o.Now().Before(p.a.Deadline) {
		return nil
	}
	return p
}

// Answer implements Approvals.
func (m *Memory) Answer(ctx context.Context, id string, allow bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.openApprovalLocked(id)
	if p == nil {
		return ErrNotFound
	}
	p.settled = true
	p.answer <- allow
	return nil
}

// ---- Redis ----

// KEYS[1] approval key, [2] answer list key, [3] the due set (all under the
// queue's hash tag); ARGV[1] value ("1"/"0"), [2] answer list ttl ms, [3]
// the approval id.
var answerScript = &luascript.Script{Src: `
if redis.call('GET', KEYS[1]) ~= 'pending' then return 0 end
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`}

// answerTTL bounds how long an answer waits for its worker to pop it.
const answerTTL = 2 * time.Minute

// Ask implements Approvals: SET PX and XADD in one MULTI.
func (r *Redis) Ask(ctx context.Context, a Approval) (Approval, error) {
	a, b, err := prepareApproval(a, r.o.Now())
	if err != nil {
		return a, err
	}
	ttl := max(time.Until(a.Deadline), time.Millisecond) // gone at the deadline: a late Answer is ErrNotFound
	_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.key("approval:", a.ID), "pending", ttl)
		// approvalstate.go: PendingApproval, ExpiredApprovals.
		p.Set(ctx, r.key("approvalq:", a.ID), b, ttl+promptGrace)
		p.ZAdd(ctx, r.key("approvaldue"), redis.Z{Score: float64(a.Deadline.UnixMilli()), Member: a.ID})
		p.Set(ctx, r.key("asking:", a.JobID), a.ID, ttl) // `odek queue show`: waiting for approval
		p.XAdd(ctx, &redis.XAddArgs{Stream: r.key("approvals"), MaxLen: 10000, Approx: true, Values: []any{"id", a.ID, "a", b}})
		return nil
	})
	if err != nil {
		return a, fmt.Errorf("queue: ask approval for %s: %w", a.JobID, err)
	}
	return a, nil
}

// AwaitAnswer implements Approvals: BLPOP in slices of at most 250 ms.
func (r *Redis) AwaitAnswer(ctx context.Context, id string, block time.Duration) (bool, bool, error) {
	key := r.key("answer:", id)
	out, err := blockLoop(ctx, block, func(b time.Duration) ([]bool, error) {
		var v []string
		var err error
		if b < 0 {
			var s string
			s, err = r.c.LPop(ctx, key).Result()
			v = []string{key, s}
		} else {
			// BLPOP with a fractional timeout (go-redis' BLPop rounds up to 1 s).
			v, err = r.c.Do(ctx, "BLPOP", key, strconv.FormatFloat(b.Seconds(), 'f', 3, 64)).StringSlice()
		}
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("queue: await approval %s: %w", id, err)
		}
		return []bool{v[1] == "1"}, nil
	})
	if err != nil || len(out) == 0 {
		return false, false, err
	}
	return out[0], true, nil
}

// ReadApprovals implements Approvals: XREADGROUP on the approvals stream
// (group ResultsGroup), then XACK and XDEL of what was read in one
// pipeline, so a question reaches one front end at most once.
func (r *Redis) ReadApprovals(ctx context.Context, consumer string, max int, block time.Duration) ([]Approval, error) {
	if max <= 0 {
		max = 1
	}
	key := r.key("approvals")
	read := func(b time.Duration) ([]Approval, error) {
		streams, err := r.c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: r.o.ResultsGroup, Consumer: consumer,
			Streams: []string{key, ">"}, Count: int64(max), Block: b}).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []Approval
		var ids []string
		now := r.o.Now()
		for _, s := range streams {
			for _, m := range s.Messages {
				ids = append(ids, m.ID)
				raw, _ := m.Values["a"].(string)
				var a Approval
				if json.Unmarshal([]byte(raw), &a) == nil && now.Before(a.Deadline) {
					out = append(out, a)
				}
			}
		}
		if len(ids) > 0 {
			p := r.c.Pipeline()
			p.XAck(ctx, key, r.o.ResultsGroup, ids...)
			p.XDel(ctx, key, ids...)
			if _, err := p.Exec(ctx); err != nil {
				return out, err
			}
		}
		return out, nil
	}
	return blockLoop(ctx, block, func(b time.Duration) ([]Approval, error) {
		out, err := read(b)
		if isNoGroup(err) {
			if err = r.ensureApprovalGroup(ctx); err == nil {
				out, err = read(b)
			}
		}
		if err != nil {
			return out, fmt.Errorf("queue: read approvals: %w", err)
		}
		return out, nil
	})
}

func (r *Redis) ensureApprovalGroup(ctx context.Context) error {
	err := r.c.XGroupCreateMkStream(ctx, r.key("approvals"), r.o.ResultsGroup, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("queue: create consumer group %s on %s: %w", r.o.ResultsGroup, r.key("approvals"), err)
	}
	return nil
}

// Answer implements Approvals: one EVALSHA (first answer wins).
func (r *Redis) Answer(ctx context.Context, id string, allow bool) error {
	if !validID(id) {
		return ErrNotFound
	}
	v := "0"
	if allow {
		v = "1"
	}
	n, err := answerScript.Run(ctx, r.c, []string{r.key("approval:", id), r.key("answer:", id), r.key("approvaldue")}, v, answerTTL.Milliseconds(), id).Int()
	if err != nil {
		return fmt.Errorf("queue: answer approval %s: %w", id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
