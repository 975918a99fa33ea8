package queue

import (
	"context"
	"fmt"
)

// Sent is how far a front end got delivering one result whose answer goes
// out in several steps (the chunks of a long answer, then its files):
// Steps is how many of them the chat's service (Telegram) accepted, in
// order, and MessageIDs the ids it gave the accepted messages.
type Sent struct {
	Steps      int   `json:"steps"`
	MessageIDs []int `json:"ids,omitempty"`
}

// Limits of a Sent record.
const (
	MaxSentSteps = 1000
	MaxSentIDs   = 64
)

// SentRecorder is the durable "sent" record of a result's delivery: a
// front end records each step right after the chat's service accepted it,
// and ReadResults hands the last record back in Delivery.Sent when the
// result is delivered again (after a crash of the front end, or to
// another front end after the result lease), so the delivery resumes at
// the next step instead of sending the answer again. RecordSent returns
// once the record is durable (an fsync in the embedded store; on Redis
// the same replica wait as AckResult). The record goes with the result:
// AckResult or ResultsRetain drops it. Recording for a result already
// acknowledged does nothing. What is left is the time between the
// service's accept and the record (one fsync or one round trip): a crash
// there sends that one step again. Memory, the embedded store and Redis
// implement it.
type SentRecorder interface {
	RecordSent(ctx context.Context, d Delivery, s Sent) error
}

// checkSent validates a record before it is stored.
func checkSent(s Sent) error {
	if s.Steps < 1 || s.Steps > MaxSentSteps {
		return fmt.Errorf("queue: sent record: steps %d: want 1..%d", s.Steps, MaxSentSteps)
	}
	if len(s.MessageIDs) > MaxSentIDs {
		return fmt.Errorf("queue: sent record: %d message ids: at most %d (MaxSentIDs)", len(s.MessageIDs), MaxSentIDs)
	}
	return nil
}

func (s Sent) clone() Sent {
	s.MessageIDs = append([]int(nil), s.MessageIDs...)
	if len(s.MessageIDs) == 0 {
		s.MessageIDs = nil
	}
	return s
}

var (
	_ SentRecorder = (*Memory)(nil)
	_ SentRecorder = (*Redis)(nil)
)

// RecordSent implements SentRecorder.
func (m *Memory) RecordSent(ctx context.Context, d Delivery, s Sent) error {
	if err := checkSent(s); err != nil {
		return err
	}
	if err := m.lockUsable(ctx); err != nil {
		return err
	}
	for _, r := range m.results {
		if r.id == d.ID && !r.acked {
			r.sent = s.clone()
			rec := r.sent
			m.recordLocked(Change{Kind: ChangeSent, Key: r.seq, JobID: r.res.JobID, Sent: &rec})
			break
		}
	}
	return m.unlockAndWait()
}
