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
	// lite holds the liteSpans, encoded when they end (appendLite), and
	// liteEnd where each ends in lite: bytes the GC does not scan, where
	// the span objects kept until the export would be scanned at every
	// collection (docs/BENCHMARKS.md, tracing on, round 3). spare and
	// spareEnd are the previous batch's, kept for reuse. len(pending) +
	// len(liteEnd) is at most size.
	lite, spare       []byte
	liteEnd, spareEnd []int
	res               *resource.Resource // liteSpans' resource
	size              int
	kick              chan struct{} // capacity 1: a batch is full
	flushReq          chan chan struct{}
	stop              chan struct{}
	done              chan struct{}
	batch             int
	wait              time.Duration
	timeout           time.Duration

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

// addLite queues an ended liteSpan, encoded now: nothing keeps the span.
func (q *queue) addLite(s *liteSpan) {
	q.admit(func() {
		if q.lite == nil { // room for a batch: no copying as a run's spans arrive
			q.lite = make([]byte, 0, min(q.batch, 512)*256)
		}
		q.lite = appendLite(q.lite, s)
		q.liteEnd = append(q.liteEnd, len(q.lite))
	})
}

// admit runs put under the queue's lock when there is room (else it
// counts a dropped span), then wakes the exporter when a batch is full.
func (q *queue) admit(put func()) {
	if q.stopped.Load() {
		q.dropped.Add(1)
		return
	}
	q.mu.Lock()
	if len(q.pending)+len(q.liteEnd) >= q.size {
		q.mu.Unlock()
		q.dropped.Add(1)
		return
	}
	put()
	n := len(q.pending) + len(q.liteEnd)
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
func (q *queue) take() (spans []spanData, lite []byte, ends []int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	spans, lite, ends = q.pending, q.lite, q.liteEnd
	q.pending, q.lite, q.liteEnd, q.spare, q.spareEnd = nil, q.spare, q.spareEnd, nil, nil
	return spans, lite, ends
}

// recycle keeps an exported batch's buffers for the next one.
func (q *queue) recycle(lite []byte, ends []int) {
	q.mu.Lock()
	q.spare, q.spareEnd = lite[:0], ends[:0]
	q.mu.Unlock()
}

func (q *queue) loop() {
	defer close(q.done)
	t := time.NewTimer(q.wait)
	defer t.Stop()
	drain := func() {
		spans, lite, ends := q.take()
		buf, bufEnds := lite, ends
		off := 0
		for len(spans) > 0 || len(ends) > 0 {
			n := min(q.batch, len(spans))
			k := min(q.batch-n, len(ends))
			var chunk []byte
			if k > 0 {
				chunk, off = lite[off:ends[k-1]], ends[k-1]
				ends = ends[k:]
			}
			q.export(spans[:n], chunk, n+k)
			clear(spans[:n]) // the exported spans can be collected
			spans = spans[n:]
		}
		if buf != nil {
			q.recycle(buf, bufEnds)
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

func (q *queue) export(spans []spanData, lite []byte, count int) {
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
