package bot

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/queue"
)

// sentLog is the durable "sent" record of one result's delivery (issue
// 23): the delivery is a fixed sequence of steps (the answer's chunks,
// then the files sent with it, then a warning), and right after Telegram
// accepts a step the record of how many were accepted is written to the
// queue (queue.SentRecorder: an fsync in the embedded store, a replicated
// write on Redis). A result delivered again after a crash comes back with
// that record (Delivery.Sent) and the steps it covers are skipped, so a
// restart resumes at the next chunk instead of sending the answer again.
// What is left is the moment between Telegram's accept and the record.
type sentLog struct {
	c    *chat
	d    queue.Delivery
	rec  queue.SentRecorder // nil: the queue keeps no record
	done int                // steps accepted before this delivery began
	step int                // the steps walked so far
	ids  []int              // message ids of the accepted chunks
	log  logrus.FieldLogger
}

func (c *chat) newSentLog(d queue.Delivery, log logrus.FieldLogger) *sentLog {
	s := &sentLog{c: c, d: d, done: d.Sent.Steps, ids: append([]int(nil), d.Sent.MessageIDs...), log: log}
	s.rec, _ = c.b.q.(queue.SentRecorder)
	return s
}

// next walks to the next step and reports whether an earlier delivery of
// the result already had it accepted (then it is not sent again).
func (s *sentLog) next() (skip bool) {
	s.step++
	return s.step <= s.done
}

// accepted records that the current step was accepted (msgID: the
// message it became, 0 for none worth keeping), durably before it
// returns. A failed record is logged, not fatal: the delivery goes on and
// only a crash before AckResult would repeat the step.
func (s *sentLog) accepted(ctx context.Context, msgID int) {
	if msgID != 0 {
		s.ids = append(s.ids, msgID)
	}
	if s.rec == nil {
		return
	}
	ids := s.ids
	if len(ids) > queue.MaxSentIDs {
		ids = ids[:queue.MaxSentIDs]
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.rec.RecordSent(rctx, s.d, queue.Sent{Steps: min(s.step, queue.MaxSentSteps), MessageIDs: ids}); err != nil {
		s.log.WithError(err).WithField("step", s.step).Warn("bot: recording a delivered chunk failed; a crash before the acknowledgement would send it again")
		return
	}
	if f := s.c.b.cfg.AfterSent; f != nil {
		f(s.d.Result.JobID, s.step)
	}
}
