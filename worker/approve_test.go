package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/worker"
)

// Issue 26 point 6: a question the chat allowed for this session is
// allowed without asking again, in that session only, and only when its
// text pins the call down (queue.SessionGrantable).
func TestApprovalAllowedForSession(t *testing.T) {
	for _, impl := range []string{"memory", "redis"} {
		t.Run(impl, func(t *testing.T) {
			q := newQueue(t, impl, queue.Options{})
			const granted = "odek: allow shell (code_execution, argv0=make, command=make deploy)? [y/N] "
			const clipped = "odek: allow shell (code_execution, argv0=make, command=make deploy …)? [y/N] "
			start(t, worker.Config{Queue: q, ApprovalTimeout: 2 * time.Second,
				Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), p tools.Prompter) (queue.Result, error) {
					ok, err := p.Confirm(ctx, job.Goal)
					if err != nil {
						return queue.Result{Answer: "error: " + err.Error()}, nil
					}
					return queue.Result{Answer: map[bool]string{true: "allowed", false: "denied"}[ok]}, nil
				}})
			st := q.(queue.ApprovalStates)
			a := q.(queue.Approvals)
			if err := st.GrantSession(context.Background(), "telegram:9", granted, time.Hour); err != nil {
				t.Fatal(err)
			}
			j := enqueue(t, q, queue.Job{ChatID: 9, UserID: 5, SessionID: "telegram:9", Goal: granted})
			if res := waitResult(t, q, j.ID); res.Answer != "allowed" {
				t.Fatalf("granted question: %+v", res)
			}
			if as, _ := a.ReadApprovals(context.Background(), "fe", 10, 0); len(as) != 0 {
				t.Fatalf("a granted question was asked: %+v", as)
			}
			// Another session, and a clipped question in the same session,
			// are asked (and denied here).
			for _, job := range []queue.Job{{ChatID: 9, UserID: 5, SessionID: "telegram:9:new", Goal: granted}, {ChatID: 9, UserID: 5, SessionID: "telegram:9", Goal: clipped}} {
				j := enqueue(t, q, job)
				var asked []queue.Approval
				for deadline := time.Now().Add(5 * time.Second); len(asked) == 0 && time.Now().Before(deadline); {
					asked, _ = a.ReadApprovals(context.Background(), "fe", 1, 100*time.Millisecond)
				}
				if len(asked) != 1 || asked[0].UserID != 5 || asked[0].SessionID != job.SessionID {
					t.Fatalf("asked %+v, want the question with the job's user and session", asked)
				}
				if err := a.Answer(context.Background(), asked[0].ID, false); err != nil {
					t.Fatal(err)
				}
				if res := waitResult(t, q, j.ID); res.Answer != "denied" {
					t.Fatalf("result %+v", res)
				}
			}
		})
	}
}
