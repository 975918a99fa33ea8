package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// heartbeater renews the leases of all of a worker's running jobs from one
// goroutine: every HeartbeatInterval it sends one batch
// (queue.HeartbeatBatcher: one round trip per 256 leases on Redis), so a
// worker at --concurrency 1000 holds no goroutine and no ticker per job
// for its leases.
type heartbeater struct {
	w *Worker

	mu   sync.Mutex
	jobs map[*hbJob]struct{}
}

// hbJob is one lease being renewed.
type hbJob struct {
	l         queue.Lease
	cancelRun context.CancelCauseFunc
	log       logrus.FieldLogger
	renewed   time.Time // last successful renewal (or the claim)
}

func newHeartbeater(w *Worker) *heartbeater {
	return &heartbeater{w: w, jobs: map[*hbJob]struct{}{}}
}

// add starts renewing l; the returned func stops it.
func (h *heartbeater) add(l queue.Lease, cancelRun context.CancelCauseFunc, log logrus.FieldLogger) (remove func()) {
	j := &hbJob{l: l, cancelRun: cancelRun, log: log, renewed: time.Now()}
	h.mu.Lock()
	h.jobs[j] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.jobs, j)
		h.mu.Unlock()
	}
}

// run beats until ctx ends.
func (h *heartbeater) run(ctx context.Context) {
	t := time.NewTicker(h.w.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.beat(ctx)
	}
}

// beat renews every registered lease once and acts on the answers: a
// cancellation request cancels the run, a lost lease stops it, and a lease
// that could not be renewed for its TTL is given up (another worker may
// own the job by now; a job must not run twice at once).
func (h *heartbeater) beat(ctx context.Context) {
	h.mu.Lock()
	js := make([]*hbJob, 0, len(h.jobs))
	for j := range h.jobs {
		js = append(js, j)
	}
	h.mu.Unlock()
	if len(js) == 0 {
		return
	}
	ls := make([]queue.Lease, len(js))
	for i, j := range js {
		ls[i] = j.l
	}
	cctx, cancel := context.WithTimeout(ctx, max(h.w.cfg.HeartbeatInterval, time.Second))
	errs := h.send(cctx, ls)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	for i, j := range js {
		err := errs[i]
		switch {
		case err == nil:
			j.renewed = now
		case errors.Is(err, queue.ErrCanceled):
			j.renewed = now
			j.cancelRun(errJobCanceled)
		case errors.Is(err, queue.ErrLeaseLost):
			j.cancelRun(errLeaseLost)
			h.drop(j)
		default:
			h.w.metrics.QueueErrors.Add(1)
			j.log.WithError(err).Warn("worker: heartbeat failed")
			if leaseExpired(now.Sub(j.renewed), h.w.cfg.LeaseTTL, h.w.cfg.HeartbeatInterval) {
				j.log.Warn("worker: lease not renewed within its TTL; stopping the run, another worker may own the job now")
				j.cancelRun(errLeaseLost)
				h.drop(j)
			}
		}
	}
}

func (h *heartbeater) drop(j *hbJob) {
	h.mu.Lock()
	delete(h.jobs, j)
	h.mu.Unlock()
}

// send renews ls in one batch when the queue can, else with one call per
// lease, all at once.
func (h *heartbeater) send(ctx context.Context, ls []queue.Lease) []error {
	if b, ok := h.w.cfg.Queue.(queue.HeartbeatBatcher); ok {
		return b.HeartbeatBatch(ctx, ls)
	}
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.w.cfg.Queue.Heartbeat(ctx, l)
		}()
	}
	wg.Wait()
	return errs
}
