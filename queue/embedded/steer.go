package embedded

import (
	"context"

	"github.com/odekrun/odek/queue"
)

// Steer implements queue.Steering. The inbox lives in memory only: the
// embedded store serves one process (the bot and its workers), so a crash
// that would lose the inbox loses the running job's progress with it, and
// the job runs again from its goal.
func (s *Store) Steer(ctx context.Context, jobID, text string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := queue.CheckSteer(jobID, text, s.o); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	j := s.jobs[jobID]
	if j == nil || j.state == stateDone {
		return queue.ErrNotFound
	}
	if s.steer == nil {
		s.steer = map[string][]string{}
	}
	if len(s.steer[jobID]) >= queue.MaxSteerPending {
		return queue.ErrSteerFull
	}
	s.steer[jobID] = append(s.steer[jobID], text)
	return nil
}

// TakeSteer implements queue.Steering.
func (s *Store) TakeSteer(ctx context.Context, jobID string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.steer[jobID]
	delete(s.steer, jobID)
	return out, nil
}
