package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/odekrun/odek/internal/luascript"
)

// Steering carries messages a front end sends into an unfinished job
// (issue 26, "steer"): the user wrote again while the chat's job ran, and
// the chat's busy policy says the new message joins the running job rather
// than waiting for its own. Steer appends a message to the job's inbox;
// the worker running the job takes the inbox with TakeSteer at its next
// model boundary (before a model call, and before it accepts a final
// answer), so the message reaches a job on any worker. When the job ends
// before its worker took them, the front end takes the rest with TakeSteer
// after the result and runs them as jobs of their own: a steered message
// is never dropped.
//
// *Redis, *Memory and the embedded store implement it.
type Steering interface {
	// Steer appends text to the inbox of the unfinished job jobID. It
	// returns ErrNotFound when the job is unknown or finished (the caller
	// runs the message as a job of its own instead), ErrSteerFull when
	// MaxSteerPending messages wait already, and a *PayloadTooLargeError
	// when text is over Options.MaxPayloadBytes.
	Steer(ctx context.Context, jobID, text string) error
	// TakeSteer removes and returns the messages waiting in jobID's inbox,
	// oldest first (none: nil). Safe to call for a finished job (the front
	// end's leftovers) and for an unknown one.
	TakeSteer(ctx context.Context, jobID string) ([]string, error)
}

// MaxSteerPending bounds the messages waiting in one job's inbox.
const MaxSteerPending = 16

// ErrSteerFull is returned by Steer when MaxSteerPending messages wait.
var ErrSteerFull = errors.New("queue: the job's steer inbox is full")

// CheckSteer validates a steer message against the queue's limits (for
// the implementations outside this package). Pure.
func CheckSteer(jobID, text string, o Options) error { return checkSteer(jobID, text, o) }

// checkSteer validates a steer message against the queue's limits. Pure.
func checkSteer(jobID, text string, o Options) error {
	if !validID(jobID) {
		return ErrNotFound
	}
	if text == "" {
		return fmt.Errorf("%w: empty steer message", ErrInvalidJob)
	}
	if len(text) > o.MaxPayloadBytes {
		return &PayloadTooLargeError{What: "steer", Limit: o.MaxPayloadBytes, Size: len(text)}
	}
	return nil
}

// ---- Redis ----

// ARGV[4] id, [5] text, [6] max pending. The inbox is a list beside the
// job's hash (same hash tag), kept for the results' retention.
var steerScript = &luascript.Script{Src: luaPrelude + `
local id = ARGV[4]
local st = redis.call('HGET', P .. 'job:' .. id, 'state')
if (not st) or st == 'done' then return 'notfound' end
local k = P .. 'steer:' .. id
if redis.call('LLEN', k) >= tonumber(ARGV[6]) then return 'full' end
redis.call('RPUSH', k, ARGV[5])
redis.call('PEXPIRE', k, RET)
return 'ok'
`}

// ARGV[4] id. Returns the inbox and empties it.
var takeSteerScript = &luascript.Script{Src: luaPrelude + `
local k = P .. 'steer:' .. ARGV[4]
local out = redis.call('LRANGE', k, 0, -1)
redis.call('DEL', k)
return out
`}

// Steer implements Steering: one script, waited for by the replicas when
// the queue waits (a steered message is a user-visible write).
func (r *Redis) Steer(ctx context.Context, jobID, text string) error {
	if err := checkSteer(jobID, text, r.o); err != nil {
		return err
	}
	s, err := asText(r.cw.runDurable(ctx, steerScript, r.ks, append(r.base(), jobID, text, MaxSteerPending)...))
	if err != nil {
		return fmt.Errorf("queue: steer %s: %w", jobID, err)
	}
	switch s {
	case "notfound":
		return ErrNotFound
	case "full":
		return ErrSteerFull
	}
	return nil
}

// TakeSteer implements Steering.
func (r *Redis) TakeSteer(ctx context.Context, jobID string) ([]string, error) {
	if !validID(jobID) {
		return nil, nil
	}
	vs, err := asSlice(r.cw.runDurable(ctx, takeSteerScript, r.ks, append(r.base(), jobID)...))
	if err != nil {
		return nil, fmt.Errorf("queue: take steer messages of %s: %w", jobID, err)
	}
	var out []string
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// ---- Memory ----

// Steer implements Steering.
func (m *Memory) Steer(ctx context.Context, jobID, text string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkSteer(jobID, text, m.o); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[jobID]
	if j == nil || j.state == stateDone {
		return ErrNotFound
	}
	if m.steer == nil {
		m.steer = map[string][]string{}
	}
	if len(m.steer[jobID]) >= MaxSteerPending {
		return ErrSteerFull
	}
	m.steer[jobID] = append(m.steer[jobID], text)
	return nil
}

// TakeSteer implements Steering.
func (m *Memory) TakeSteer(ctx context.Context, jobID string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.steer[jobID]
	delete(m.steer, jobID)
	return out, nil
}
