package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
)

// CompactJobPrefix starts the id of every compaction job a QueueCompactor
// enqueues (the queue fills other jobs' ids with hex digits only, so no
// chat job has it).
const CompactJobPrefix = "compact-"

// DefaultCompactWait bounds how long QueueCompactor waits for a worker to
// report a compaction when Wait is 0.
const DefaultCompactWait = 3 * time.Minute

// QueueCompactor is the /compact of a bot that has no model key of its
// own (the compose bot): the compaction runs on a worker as a job of kind
// queue.KindCompact, with the worker's model and key, and the bot waits
// for the worker's report on the job's progress stream (the
// context_compacted event, or run_failed). The job's result, which the
// results stream brings to the chat afterwards, is acknowledged without a
// message when the chat was already told (deliverCompact); a result whose
// waiter is gone (the bot restarted meanwhile) is shown like an answer.
//
// The bot asks only between jobs (the chat's actor refuses /compact while
// a job of the chat is unfinished and waits for the compaction), so no
// worker writes the session meanwhile.
type QueueCompactor struct {
	Queue queue.Queue
	// Wait bounds the wait for a worker's report; 0 ⇒ DefaultCompactWait.
	// When it passes the job is canceled and /compact fails.
	Wait time.Duration

	mu       sync.Mutex
	reported map[string]bool // job ids whose outcome a chat was told
}

// Compact implements Compactor.
func (q *QueueCompactor) Compact(ctx context.Context, r CompactRequest) (Compacted, error) {
	if in, ok := q.Queue.(interface {
		Workers(context.Context) ([]queue.WorkerInfo, error)
	}); ok {
		// Workers announce themselves when they start: with none, the
		// chat would wait out Wait for nothing.
		if ws, err := in.Workers(ctx); err == nil && len(ws) == 0 {
			return Compacted{}, errors.New("no worker is running to compact it")
		}
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Compacted{}, err
	}
	job := queue.Job{ID: CompactJobPrefix + hex.EncodeToString(b[:]), ChatID: r.ChatID, Goal: "/compact", SessionID: r.Session,
		Model: r.Model, Kind: queue.KindCompact}
	stored, _, err := q.Queue.Enqueue(ctx, job)
	if err != nil {
		return Compacted{}, fmt.Errorf("asking a worker to compact: %w", err)
	}
	wait := q.Wait
	if wait <= 0 {
		wait = DefaultCompactWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	out, err := waitCompaction(wctx, q.Queue, stored.ID)
	told := ctx.Err() == nil
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		// No report in time: a worker that claims the job later must not
		// compact behind the chat's next job.
		cctx, c2 := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		cerr := q.Queue.Cancel(cctx, stored.ID)
		c2()
		err = fmt.Errorf("no worker reported the compaction within %s", wait)
		if errors.Is(cerr, queue.ErrNotFound) {
			// The job has finished but its report was lost: its result,
			// which says what it did, is shown when it arrives.
			err, told = errors.New("the worker's report was lost; its answer follows"), false
		}
	}
	if told {
		// The chat is told the outcome (or the failure) now: its result
		// needs no message of its own.
		q.mu.Lock()
		if q.reported == nil {
			q.reported = map[string]bool{}
		}
		q.reported[stored.ID] = true
		q.mu.Unlock()
	}
	return out, err
}

// waitCompaction reads job id's progress stream until the worker reports
// the compaction's outcome.
func waitCompaction(ctx context.Context, q queue.Queue, id string) (Compacted, error) {
	after := ""
	for {
		ps, err := q.ReadProgress(ctx, id, after, 32, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return Compacted{}, ctx.Err()
			}
			return Compacted{}, fmt.Errorf("reading the compaction's progress: %w", err)
		}
		for _, p := range ps {
			after = p.ID
			var ev events.Event
			if json.Unmarshal(p.Data, &ev) != nil || ev.Schema != events.Schema {
				continue // the worker's progress summaries
			}
			switch ev.Type {
			case events.ContextCompacted:
				var d events.ContextCompactedData
				d.Decode(ev.Data)
				return Compacted{Folded: d.FoldedGroups, BeforeTokens: d.BeforeTokens, AfterTokens: d.AfterTokens,
					SideInputTokens: d.SideCallInputTokens, SideOutput: d.SideCallOutputTokens}, nil
			case events.RunFailed:
				var d events.RunFailedData
				d.Decode(ev.Data)
				return Compacted{}, fmt.Errorf("the worker's compaction failed (%s)", d.ErrorClass)
			}
		}
		if ctx.Err() != nil {
			return Compacted{}, ctx.Err()
		}
	}
}

// deliverCompact settles the result of a compaction job whose outcome (or
// failure) the chat was already told: it is acknowledged without a message (its usage
// was counted when the chat was told). It reports whether it did; any
// other result is delivered as usual. It runs in the chat's actor.
func (c *chat) deliverCompact(ctx context.Context, d queue.Delivery) bool {
	qc, ok := c.b.cfg.Compactor.(*QueueCompactor)
	if !ok || !strings.HasPrefix(d.Result.JobID, CompactJobPrefix) {
		return false
	}
	qc.mu.Lock()
	told := qc.reported[d.Result.JobID]
	delete(qc.reported, d.Result.JobID)
	qc.mu.Unlock()
	if !told {
		return false
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.b.q.AckResult(actx, d); err != nil && !errors.Is(err, context.Canceled) {
		c.b.log.WithError(err).WithField("job_id", d.Result.JobID).Warn("bot: acknowledging a compaction's result failed")
	}
	return true
}
