package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBuffer is the Emitter's channel capacity when Options.Buffer is 0.
const DefaultBuffer = 1024

// Options configure an Emitter. The zero value is valid.
type Options struct {
	// Buffer is the capacity of the channel between Emit and the sink, in
	// events. 0 (or less) means DefaultBuffer. When it is full, Emit drops.
	Buffer int
	// Clock stamps events; nil means time.Now. Timestamps are converted to
	// UTC.
	Clock func() time.Time
	// Redact is applied to the tool name and to every string in Data,
	// recursively, map keys included; nil means no redaction. It must be
	// safe for concurrent use (Emit calls it on the caller's goroutine).
	Redact func(string) string
	// OnError receives sink failures (*SinkError, rate-limited as
	// described there) and panics of Redact. nil means they are only
	// counted (Stats). It is called from the drain goroutine or from
	// Emit's caller and must be safe for concurrent use; a panic in it is
	// recovered and ignored.
	OnError func(error)
}

// Stats are an Emitter's counters.
type Stats struct {
	// Emitted counts events given a Seq: the last Seq assigned.
	Emitted uint64
	// Written counts events the sink accepted (with a nil sink: discarded).
	Written uint64
	// Dropped counts events that never reached the sink: the buffer was
	// full, the emitter was closed, or Redact panicked.
	Dropped uint64
	// SinkErrors counts events whose Write failed or panicked.
	SinkErrors uint64
}

// Emitter stamps events with the run id, session id, sequence number,
// timestamp and schema, redacts them, and hands them to its sink from one
// drain goroutine. See the package documentation for its guarantees. All
// methods are safe for concurrent use, and all are no-ops on a nil
// *Emitter, so callers need no checks.
type Emitter struct {
	runID   string
	sink    Sink
	clock   func() time.Time
	redact  func(string) string
	onError func(error)

	ch   chan *Event
	done chan struct{} // closed when the drain goroutine returns

	mu        sync.Mutex // orders Seq assignment with sends and closing ch
	seq       uint64
	sessionID string
	closed    bool
	final     *Event // written after ch drains; set under mu before ch closes
	finalErr  error  // result of writing final; read after done

	written, dropped, failed atomic.Uint64
}

// NewRunID returns a new random 128-bit run id as 32 lower-case hex digits.
func NewRunID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails; a broken random source crashes the program
	return hex.EncodeToString(b[:])
}

// NewEmitter starts an Emitter for one run and its drain goroutine. A nil
// sink discards events (they are still counted). The Emitter does not own
// the sink: close the sink after Final or Close returned.
func NewEmitter(runID string, sink Sink, opts Options) *Emitter {
	buf := opts.Buffer
	if buf <= 0 {
		buf = DefaultBuffer
	}
	e := &Emitter{
		runID:   runID,
		sink:    sink,
		clock:   opts.Clock,
		redact:  opts.Redact,
		onError: opts.OnError,
		ch:      make(chan *Event, buf),
		done:    make(chan struct{}),
	}
	if e.clock == nil {
		e.clock = time.Now
	}
	go e.drain()
	return e
}

// RunID returns the run id stamped on every event.
func (e *Emitter) RunID() string {
	if e == nil {
		return ""
	}
	return e.runID
}

// SetSessionID sets the session id stamped on events emitted after the
// call.
func (e *Emitter) SetSessionID(id string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.sessionID = id
	e.mu.Unlock()
}

// Emit queues one event and never blocks on the sink. It assigns the next
// Seq even when the event is then dropped because the buffer is full, so a
// gap in the written stream shows a drop. After Final or Close it only
// counts a drop. data is copied with Redact applied; the caller keeps
// ownership of it. iteration 0 and tool "" are omitted from the event.
func (e *Emitter) Emit(typ Type, iteration int, tool string, data map[string]any) {
	if e == nil {
		return
	}
	ev, ok := e.build(typ, iteration, tool, data)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		e.dropped.Add(1)
		return
	}
	e.seq++
	if !ok {
		e.dropped.Add(1)
		return
	}
	e.stamp(ev)
	select {
	case e.ch <- ev:
	default:
		e.dropped.Add(1)
	}
}

// Final emits the run's last event (run_completed or run_failed), closes
// the emitter and waits until the sink has written it and every event
// queued before it; with a FileSink that means synced to stable storage.
// The final event is never dropped for a full buffer. It returns ctx's
// error if ctx ends first (the drain goes on in the background; Close
// waits for it), a *SinkError if the sink failed on the final event, and
// ErrClosed if the emitter was already closed (the event is then dropped).
func (e *Emitter) Final(ctx context.Context, typ Type, data map[string]any) error {
	if e == nil {
		return nil
	}
	ev, ok := e.build(typ, 0, "", data)
	if !ok {
		// Redact panicked: still close the run with an event that carries
		// no data rather than none at all.
		ev, _ = e.build(typ, 0, "", nil)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.dropped.Add(1)
		return ErrClosed
	}
	e.seq++
	e.stamp(ev)
	e.final = ev
	e.closed = true
	close(e.ch)
	e.mu.Unlock()
	select {
	case <-e.done:
		return e.finalErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting events, waits until the sink has written those
// queued, and stops the drain goroutine. It is idempotent; after it, Emit
// counts drops. It returns ctx's error if ctx ends first.
func (e *Emitter) Close(ctx context.Context) error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.ch)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped returns the number of events that never reached the sink.
func (e *Emitter) Dropped() uint64 {
	if e == nil {
		return 0
	}
	return e.dropped.Load()
}

// Stats returns the emitter's counters.
func (e *Emitter) Stats() Stats {
	if e == nil {
		return Stats{}
	}
	e.mu.Lock()
	emitted := e.seq
	e.mu.Unlock()
	return Stats{
		Emitted:    emitted,
		Written:    e.written.Load(),
		Dropped:    e.dropped.Load(),
		SinkErrors: e.failed.Load(),
	}
}

// build makes the event without the fields stamp sets. ok is false when
// Redact panicked; the panic is reported to OnError.
func (e *Emitter) build(typ Type, iteration int, tool string, data map[string]any) (ev *Event, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			e.report(panicError(v))
			ok = false
		}
	}()
	ev = &Event{
		Schema:    Schema,
		Type:      typ,
		RunID:     e.runID,
		Iteration: iteration,
		Tool:      e.redactString(tool),
	}
	if len(data) > 0 {
		ev.Data = redactMap(data, e.redact, 0)
	}
	return ev, true
}

func (e *Emitter) redactString(s string) string {
	if e.redact == nil || s == "" {
		return s
	}
	return e.redact(s)
}

// stamp gives ev the current Seq, Timestamp and SessionID; e.mu must be
// held.
func (e *Emitter) stamp(ev *Event) {
	ev.Seq = e.seq
	ev.SessionID = e.sessionID
	ev.Timestamp = e.clock().UTC()
}

func (e *Emitter) drain() {
	defer close(e.done)
	for ev := range e.ch {
		e.write(ev)
	}
	// ch was closed under mu, after final was set.
	e.mu.Lock()
	final := e.final
	e.mu.Unlock()
	if final != nil {
		e.finalErr = e.write(final)
	}
}

// write hands one event to the sink, recovering a panic.
func (e *Emitter) write(ev *Event) error {
	if e.sink == nil {
		e.written.Add(1)
		return nil
	}
	err := writeRecovered(e.sink, ev)
	if err == nil {
		e.written.Add(1)
		return nil
	}
	n := e.failed.Add(1)
	serr := &SinkError{Seq: ev.Seq, Type: ev.Type, Failures: n, Err: err}
	if n&(n-1) == 0 { // 1, 2, 4, 8, …
		e.report(serr)
	}
	return serr
}

func (e *Emitter) report(err error) {
	if e.onError == nil {
		return
	}
	defer func() { _ = recover() }()
	e.onError(err)
}
