package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// publisher moves progress entries of every running job to the queue from
// one goroutine, many entries per round trip when the queue is a
// queue.ProgressBatcher. Order is kept per job (and overall).
type publisher struct {
	q       Queue
	log     logrus.FieldLogger
	metrics *Metrics
	ch      chan pubItem
	done    chan struct{}
}

// pubItem is an entry, or (flushed != nil, no data) a marker closed once
// everything queued before it was published.
type pubItem struct {
	entry   queue.ProgressEntry
	flushed chan struct{}
}

// maxProgressBatch bounds the entries of one batched publish.
const maxProgressBatch = 256

func newPublisher(q Queue, log logrus.FieldLogger, m *Metrics) *publisher {
	return &publisher{q: q, log: log, metrics: m, ch: make(chan pubItem, 4096), done: make(chan struct{})}
}

// run publishes until ch is closed; ctx bounds each queue call.
func (p *publisher) run(ctx context.Context) {
	defer close(p.done)
	batcher, _ := p.q.(queue.ProgressBatcher)
	var entries []queue.ProgressEntry
	var markers []chan struct{}
	for it := range p.ch {
		entries, markers = entries[:0], markers[:0]
		add := func(it pubItem) {
			if it.flushed != nil {
				markers = append(markers, it.flushed)
			} else {
				entries = append(entries, it.entry)
			}
		}
		add(it)
	drain:
		for len(entries) < maxProgressBatch {
			select {
			case it, ok := <-p.ch:
				if !ok {
					break drain
				}
				add(it)
			default:
				break drain
			}
		}
		if len(entries) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			if batcher != nil {
				err = batcher.PublishProgressBatch(cctx, entries)
			} else {
				for _, e := range entries {
					if e2 := p.q.PublishProgress(cctx, e.JobID, e.Data); e2 != nil && err == nil {
						err = e2
					}
				}
			}
			cancel()
			if err != nil {
				// Progress is best effort: log and go on.
				p.metrics.QueueErrors.Add(1)
				p.log.WithError(err).WithField("entries", len(entries)).Warn("worker: progress not published")
			}
		}
		for _, m := range markers {
			close(m)
		}
	}
}

// flush returns once everything queued before the call is published, or
// ctx is done.
func (p *publisher) flush(ctx context.Context) {
	m := make(chan struct{})
	select {
	case p.ch <- pubItem{flushed: m}:
	case <-ctx.Done():
		return
	}
	select {
	case <-m:
	case <-ctx.Done():
	}
}

// jobSink is the events.Sink of one job: every event goes to the job's
// progress stream as its odek.event/v1 JSON line, and a queue.ProgressSummary
// follows every iteration and the run's end. The agent's emitter calls
// Write from one goroutine.
type jobSink struct {
	p     *publisher
	m     *Metrics // nil: no metrics
	start time.Time
	sum   queue.ProgressSummary
}

func newJobSink(p *publisher, job queue.Job, start time.Time) *jobSink {
	s := &jobSink{p: p, start: start, sum: queue.ProgressSummary{Schema: queue.SummarySchema, JobID: job.ID, State: "started", Attempt: job.Attempt}}
	s.publishSummary()
	return s
}

func (s *jobSink) send(data []byte) {
	s.p.ch <- pubItem{entry: queue.ProgressEntry{JobID: s.sum.JobID, Data: data}}
}

func (s *jobSink) publishSummary() {
	s.sum.ElapsedMS = time.Since(s.start).Milliseconds()
	b, err := json.Marshal(s.sum)
	if err == nil {
		s.send(b)
	}
}

// Write implements events.Sink.
func (s *jobSink) Write(ev *events.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	s.send(b)
	if s.m != nil {
		s.m.observeEvent(ev)
	}
	switch ev.Type {
	case events.ToolCallStarted:
		s.sum.ToolCalls++
		s.sum.LastTool = ev.Tool
	case events.IterationCompleted:
		s.sum.State, s.sum.Iteration = "running", ev.Iteration
		var d events.IterationCompletedData
		d.Decode(ev.Data)
		s.sum.InputTokens, s.sum.OutputTokens = int64(d.InputTokens), int64(d.OutputTokens)
		s.publishSummary()
	case events.RunCompleted, events.RunFailed:
		s.sum.State, s.sum.Outcome = "finished", string(ev.Type)
		var failed events.RunFailedData
		failed.Decode(ev.Data)
		if failed.ErrorClass != "" {
			s.sum.ErrorClass = failed.ErrorClass
		}
		// run_completed carries the run's totals (run_failed does not).
		var done events.RunCompletedData
		done.Decode(ev.Data)
		if done.InputTokens > 0 {
			s.sum.InputTokens, s.sum.OutputTokens = int64(done.InputTokens), int64(done.OutputTokens)
		}
		s.publishSummary()
	}
	return nil
}
