package schedule

import (
	"context"
	"fmt"
)

// Counts are a store's schedules at a glance (`odek queue stats`).
type Counts struct {
	Schedules int64 `json:"schedules"` // all
	Enabled   int64 `json:"enabled"`   // with a next fire
	Pending   int64 `json:"pending"`   // claimed fires not yet completed
}

// Counter is a Store that counts without listing every schedule.
type Counter interface {
	Counts(ctx context.Context) (Counts, error)
}

// Counts implements Counter: three cardinalities in one round trip.
func (r *Redis) Counts(ctx context.Context) (Counts, error) {
	pipe := r.c.Pipeline()
	all, due, firing := pipe.SCard(ctx, r.kAll()), pipe.ZCard(ctx, r.kDue()), pipe.ZCard(ctx, r.kFiring())
	if _, err := pipe.Exec(ctx); err != nil {
		return Counts{}, redisErr("counts", err)
	}
	return Counts{Schedules: all.Val(), Enabled: due.Val(), Pending: firing.Val()}, nil
}

// Counts implements Counter.
func (f *File) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := f.update(false, func(st *fileState) error {
		for _, s := range st.Schedules {
			c.Schedules++
			if s.Enabled && !s.Next.IsZero() {
				c.Enabled++
			}
		}
		c.Pending = int64(len(st.Fires))
		return nil
	})
	if err != nil {
		return Counts{}, fmt.Errorf("schedule: counts: %w", err)
	}
	return c, nil
}
