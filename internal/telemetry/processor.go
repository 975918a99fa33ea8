package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

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

// queue is the span processor: OnEnd puts a span in a bounded channel
// without ever waiting, one goroutine drains it into batches and exports
// each with a timeout. The SDK's batch processor also drops when full, but
// does not tell how many; the operator needs that number.
type queue struct {
	exp      sdktrace.SpanExporter
	ch       chan sdktrace.ReadOnlySpan
	flushReq chan chan struct{}
	stop     chan struct{}
	done     chan struct{}
	batch    int
	wait     time.Duration
	timeout  time.Duration

	// exportCtx is canceled when Shutdown's deadline passes, ending an
	// export stuck on a dead collector.
	exportCtx    context.Context
	cancelExport context.CancelFunc

	stopped                           atomic.Bool
	queued, dropped, exported, failed atomic.Uint64
	stopOnce                          sync.Once
}

func newQueue(exp sdktrace.SpanExporter, size, batch int, wait, timeout time.Duration) *queue {
	q := &queue{
		exp: exp, ch: make(chan sdktrace.ReadOnlySpan, size),
		flushReq: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		batch: min(batch, size), wait: wait, timeout: timeout,
	}
	q.exportCtx, q.cancelExport = context.WithCancel(context.Background())
	go q.loop()
	return q
}

func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd never blocks: a full queue drops the span.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if q.stopped.Load() {
		q.dropped.Add(1)
		return
	}
	select {
	case q.ch <- s:
		q.queued.Add(1)
	default:
		q.dropped.Add(1)
	}
}

func (q *queue) loop() {
	defer close(q.done)
	buf := make([]sdktrace.ReadOnlySpan, 0, q.batch)
	t := time.NewTimer(q.wait)
	defer t.Stop()
	flush := func() {
		if len(buf) > 0 {
			q.export(buf)
			clear(buf)
			buf = buf[:0]
		}
	}
	drain := func() {
		for {
			select {
			case s := <-q.ch:
				buf = append(buf, s)
				if len(buf) == q.batch {
					flush()
				}
			default:
				flush()
				return
			}
		}
	}
	for {
		select {
		case s := <-q.ch:
			buf = append(buf, s)
			if len(buf) == q.batch {
				flush()
			}
		case <-t.C:
			flush()
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

func (q *queue) export(spans []sdktrace.ReadOnlySpan) {
	ctx, cancel := context.WithTimeout(q.exportCtx, q.timeout)
	err := q.exp.ExportSpans(ctx, spans)
	cancel()
	if err != nil {
		q.failed.Add(uint64(len(spans)))
		return
	}
	q.exported.Add(uint64(len(spans)))
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
