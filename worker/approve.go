package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/odekrun/odek/agent"
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

// Confirm implements agent.Prompter. A question the chat allowed for this
// session ("allow for this session", queue.ApprovalStates) is allowed
// without asking again. A timeout is a deny with agent.ErrNoAnswer (the
// reason says nobody answered); a queue failure is an error, which
// agent.Authorize also treats as deny.
func (p *approver) Confirm(ctx context.Context, question string) (bool, error) {
	if st, ok := p.a.(queue.ApprovalStates); ok && p.job.SessionID != "" && queue.SessionGrantable(question) {
		granted, err := st.SessionGranted(ctx, p.job.SessionID, question)
		if err != nil {
			return false, err
		}
		if granted {
			return true, nil
		}
	}
	ap, err := p.a.Ask(ctx, queue.Approval{JobID: p.job.ID, ChatID: p.job.ChatID, Question: question, Deadline: p.now().Add(p.timeout),
		UserID: p.job.UserID, SessionID: p.job.SessionID})
	if err != nil {
		return false, err
	}
	for {
		left := ap.Deadline.Sub(p.now())
		if left <= 0 {
			return false, fmt.Errorf("%w (after %s)", agent.ErrNoAnswer, p.timeout)
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
