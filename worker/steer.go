package worker

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/queue"
)

// withSteer gives the job's run the messages its chat steered into it
// (issue 26): when the queue carries them (queue.Steering), the run's
// context holds an agent.SteerFunc that takes the job's inbox at each model
// boundary. A failed take leaves the messages in the inbox, for the next
// boundary or, after the job, the front end.
func withSteer(ctx context.Context, q Queue, jobID string, log logrus.FieldLogger) context.Context {
	st, ok := q.(queue.Steering)
	if !ok {
		return ctx
	}
	return agent.WithSteer(ctx, func(ctx context.Context) []string {
		msgs, err := st.TakeSteer(ctx, jobID)
		if err != nil {
			log.WithError(err).Warn("worker: reading the job's steered messages failed; they wait for the next model call")
			return nil
		}
		if len(msgs) > 0 {
			log.WithField("messages", len(msgs)).Info("worker: steered message(s) joined the running job")
		}
		return msgs
	})
}
