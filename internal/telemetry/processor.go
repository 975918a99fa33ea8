package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Stats counts what became of finished spans since Setup.
type Stats struct {
	// Queued spans entered the export queue.
	Queued uint64
	// Dropped spans found the queue full (or came after Shutdown) and
	// were never exported.
	Dropped uint64
	// Exported spans were accepted by the collector.
	Exported uint64
	// Failed spans were in an export the collector refused or that timed
	// out; they are not retried beyond the exporter's own retries.
	Failed uint64
}

// queue is the span processor: OnEnd appends a span to a bounded slice
// under a mutex without ever waiting, one goroutine takes what is pending
// in batches and exports each with a timeout. The SDK's batch processor
// also drops when full, but does not tell how many; the operator needs
// that number.
//
// OnEnd wakes the export goroutine only when a batch is full (or on
// ForceFlush, Shutdown, and the ScheduleWait timer), not once per span as
// a channel send to a parked receiver would: in `odek run` those two
// goroutine wake-ups per loop iteration (a model call's span and a tool
// call's) cost more CPU than recording the spans (docs/BENCHMARKS.md,
// issue 24).
type queue struct {
	exp     *exporter
	mu      sync.Mutex
	pending []spanData // SDK spans' snapshots
	// lite holds the liteSpans, encoded when they end (appendLite), in
	// chunks of liteChunkSize bytes, and liteN counts them: bytes the GC
	// does not scan, where the span objects kept until the export would
	// be scanned at every collection (docs/BENCHMARKS.md, tracing on,
	// round 3). A chunk is allocated as spans arrive, not a batch's room
	// at once: a short run's spans fit in a few, and a longer run's are
	// never copied to grow a buffer. spare keeps exported chunks for
	// reuse. len(pending) + liteN is at most size.
	lite, spare []liteChunk
	liteN       int
	res         *resource.Resource // liteSpans' resource
	size        int
	kick        chan struct{} // capacity 1: a batch is full
	flushReq    chan chan struct{}
	stop        chan struct{}
	done        chan struct{}
	batch       int
	wait        time.Duration
	timeout     time.Duration

	// exportCtx is canceled when Shutdown's deadline passes, ending an
	// export stuck on a dead collector.
	exportCtx    context.Context
	cancelExport context.CancelFunc

	stopped                           atomic.Bool
	queued, dropped, exported, failed atomic.Uint64
	stopOnce                          sync.Once
}

func newQueue(exp *exporter, res *resource.Resource, size, batch int, wait, timeout time.Duration) *queue {
	q := &queue{
		exp: exp, res: res, size: size, kick: make(chan struct{}, 1),
		flushReq: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		batch: min(batch, size), wait: wait, timeout: timeout,
	}
	q.exportCtx, q.cancelExport = context.WithCancel(context.Background())
	go q.loop()
	return q
}

func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd never blocks on the export: a full queue drops the span.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	q.add(s)
}

// add queues a finished, sampled span.
func (q *queue) add(s spanData) {
	q.admit(func() { q.pending = append(q.pending, s) })
}

// liteChunk is encoded liteSpans (ScopeSpans.spans fields): n of them in b.
type liteChunk struct {
	b []byte
	n int
}

// liteChunkSize is a chunk's room: about 30 encoded chat or tool spans
// (~230 bytes each without captured content). A span that does not fit
// starts the next chunk; one larger than a chunk grows its own.
const liteChunkSize = 8 << 10

// addLite queues an ended liteSpan, encoded now: nothing keeps the span.
func (q *queue) addLite(s *liteSpan) {
	q.admit(func() {
		if k := len(q.lite) - 1; k < 0 || q.lite[k].n == q.batch || len(q.lite[k].b) > liteChunkSize-liteChunkSize/8 {
			q.lite = append(q.lite, q.newChunk())
		}
		c := &q.lite[len(q.lite)-1]
		c.b = appendLite(c.b, s)
		c.n++
		q.liteN++
	})
}

// newChunk returns an empty chunk, a spare one when there is one. Called
// with q.mu held.
func (q *queue) newChunk() liteChunk {
	if k := len(q.spare) - 1; k >= 0 {
		c := q.spare[k]
		q.spare[k] = liteChunk{}
		q.spare = q.spare[:k]
		return c
	}
	return liteChunk{b: make([]byte, 0, liteChunkSize)}
}

// admit runs put under the queue's lock when there is room (else it
// counts a dropped span), then wakes the exporter when a batch is full.
func (q *queue) admit(put func()) {
	if q.stopped.Load() {
		q.dropped.Add(1)
		return
	}
	q.mu.Lock()
	if len(q.pending)+q.liteN >= q.size {
		q.mu.Unlock()
		q.dropped.Add(1)
		return
	}
	put()
	n := len(q.pending) + q.liteN
	q.mu.Unlock()
	q.queued.Add(1)
	q.kickAt(n)
}

// kickAt wakes the export goroutine when n pending spans fill a batch.
func (q *queue) kickAt(n int) {
	if n%q.batch == 0 {
		select {
		case q.kick <- struct{}{}:
		default: // already kicked
		}
	}
}

// take removes and returns every pending span.
func (q *queue) take() (spans []spanData, lite []liteChunk) {
	q.mu.Lock()
	defer q.mu.Unlock()
	spans, lite = q.pending, q.lite
	q.pending, q.lite, q.liteN = nil, nil, 0
	return spans, lite
}

// recycle keeps an exported batch's chunks of the usual size (as many
// as the next batch may fill) for the next one.
func (q *queue) recycle(lite []liteChunk) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range lite {
		if cap(c.b) == liteChunkSize && len(q.spare) < q.size/8+1 {
			q.spare = append(q.spare, liteChunk{b: c.b[:0]})
		}
	}
}

func (q *queue) loop() {
	defer close(q.done)
	t := time.NewTimer(q.wait)
	defer t.Stop()
	var bufs [][]byte
	drain := func() {
		spans, lite := q.take()
		all := lite
		for len(spans) > 0 || len(lite) > 0 {
			n := min(q.batch, len(spans))
			bufs = bufs[:0]
			k := n
			for len(lite) > 0 && k+lite[0].n <= q.batch {
				bufs = append(bufs, lite[0].b)
				k += lite[0].n
				lite = lite[1:]
			}
			q.export(spans[:n], bufs, k)
			clear(spans[:n]) // the exported spans can be collected
			spans = spans[n:]
			clear(bufs)
		}
		if all != nil {
			q.recycle(all)
		}
	}
	for {
		select {
		case <-q.kick:
			drain()
		case <-t.C:
			drain()
			t.Reset(q.wait)
		case ack := <-q.flushReq:
			drain()
			close(ack)
		case <-q.stop:
			drain()
			return
		}
	}
}

func (q *queue) export(spans []spanData, lite [][]byte, count int) {
	ctx, cancel := context.WithTimeout(q.exportCtx, q.timeout)
	err := q.exp.ExportSpans(ctx, spans, lite, q.res)
	cancel()
	if err != nil {
		q.failed.Add(uint64(count))
		return
	}
	q.exported.Add(uint64(count))
}

// ForceFlush exports what is queued now, or gives up when ctx ends.
func (q *queue) ForceFlush(ctx context.Context) error {
	if q.stopped.Load() {
		return nil
	}
	ack := make(chan struct{})
	select {
	case q.flushReq <- ack:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued until ctx ends, then cancels the export
// in flight (its spans count as failed) and shuts the exporter down.
func (q *queue) Shutdown(ctx context.Context) error {
	q.stopOnce.Do(func() {
		q.stopped.Store(true)
		close(q.stop)
	})
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancelExport()
		<-q.done
	}
	q.cancelExport()
	return q.exp.Shutdown(ctx)
}

func (q *queue) stats() Stats {
	return Stats{Queued: q.queued.Load(), Dropped: q.dropped.Load(), Exported: q.exported.Load(), Failed: q.failed.Load()}
}
