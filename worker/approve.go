package worker

import (
	"context"
	"time"

	"github.com/odekrun/odek/queue"
)

// approver is the agent.Prompter of one job: it asks the job's chat over
// the queue and blocks until the answer, the deadline (deny) or ctx.
type approver struct {
	a       queue.Approvals
	job     queue.Job
	timeout time.Duration
	now     func() time.Time
}

// Confirm implements agent.Prompter. A timeout is a deny without error;
// a queue failure is an error, which agent.Authorize also treats as deny.
func (p *approver) Confirm(ctx context.Context, question string) (bool, error) {
	ap, err := p.a.Ask(ctx, queue.Approval{JobID: p.job.ID, ChatID: p.job.ChatID, Question: question, Deadline: p.now().Add(p.timeout)})
	if err != nil {
		return false, err
	}
	for {
		left := ap.Deadline.Sub(p.now())
		if left <= 0 {
			return false, nil
		}
		allow, ok, err := p.a.AwaitAnswer(ctx, ap.ID, left)
		switch {
		case err != nil:
			return false, err
		case ok:
			return allow, nil
		}
	}
}
