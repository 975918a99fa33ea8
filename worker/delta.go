package worker

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/queue"
)

// deltaEvery is the least time between two answer-delta entries of one
// job: the deltas in between are coalesced (a model streams tens of
// pieces a second; a chat shows a few updates a second at most).
const deltaEvery = 250 * time.Millisecond

// maxDeltaBytes bounds one entry's text (far below the queue's payload
// limit); a longer run of deltas is split.
const maxDeltaBytes = 16 << 10

// deltaSink turns one job's streamed answer (the run's agent signals
// SignalAnswerStart and SignalAnswerDelta, text the run already masked)
// into queue.AnswerDelta progress entries on the job's stream, at most one
// per deltaEvery. Safe for concurrent use (signals come from the run's
// goroutines, flushes on a timer's).
type deltaSink struct {
	s     *jobSink
	jobID string

	mu      sync.Mutex
	call    int
	offset  int    // bytes of this call's text published
	pending []byte // received, not yet published
	last    time.Time
	timer   *time.Timer
	stopped bool
}

func newDeltaSink(s *jobSink) *deltaSink { return &deltaSink{s: s, jobID: s.sum.JobID} }

// signal is the run's agent.Config.AgentSignalHandler; signals other than
// the answer's are ignored.
func (d *deltaSink) signal(ev agent.SignalEvent) {
	switch ev.Type {
	case agent.SignalAnswerStart:
		d.begin()
	case agent.SignalAnswerDelta:
		d.delta(ev.Text)
	}
}

func (d *deltaSink) begin() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushLocked()
	d.call++
	d.offset = 0
}

func (d *deltaSink) delta(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || d.call == 0 {
		return
	}
	d.pending = append(d.pending, text...)
	if wait := deltaEvery - time.Since(d.last); wait > 0 {
		if d.timer == nil {
			d.timer = time.AfterFunc(wait, func() {
				d.mu.Lock()
				defer d.mu.Unlock()
				d.timer = nil
				d.flushLocked()
			})
		}
		return
	}
	d.flushLocked()
}

// flushLocked publishes what is pending. d.mu must be held. Only a
// publish starts the next deltaEvery: a flush with nothing pending (at the
// start of a model call) must not hold back the call's first text, which
// is what a chat's first draft waits for (issue 26).
func (d *deltaSink) flushLocked() {
	if len(d.pending) == 0 || d.stopped {
		return
	}
	for len(d.pending) > 0 && !d.stopped {
		n := min(len(d.pending), maxDeltaBytes)
		for n < len(d.pending) && n > 0 && d.pending[n]&0xC0 == 0x80 {
			n-- // split at a rune boundary
		}
		b, err := json.Marshal(queue.AnswerDelta{Schema: queue.DeltaSchema, JobID: d.jobID, Call: d.call, Offset: d.offset, Text: string(d.pending[:n])})
		if err != nil {
			return
		}
		d.s.send(b)
		d.offset += n
		d.pending = d.pending[n:]
	}
	d.pending = d.pending[:0]
	d.last = time.Now()
}

// stop ends the sink when the run returned: what is pending goes out, so
// the stream holds the whole text, then nothing more.
func (d *deltaSink) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushLocked()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}
