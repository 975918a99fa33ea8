package schedule

import (
	"math"
	"sync/atomic"
	"time"
)

// AddCounter registers one counter read at scrape time (worker.Worker's
// AddCounterFunc has this shape). The package takes a function, not a
// metrics library's registry, so a binary that hosts a runner does not
// link one for it.
type AddCounter func(name, help string, value func() float64) error

// Register adds the runner's metrics through add and makes the runner
// observe fire lag: odek_schedule_fires_total, _missed_total,
// _inactive_total, _late_total, _claims_lost_total, _reclaimed_total,
// _failed_total, and odek_schedule_fire_lag_seconds_total (scheduled time
// to job enqueued, summed over fires: divided by fires_total it is the
// mean lag). Call it before Run.
func (r *Runner) Register(add AddCounter) error {
	r.init()
	counters := []struct {
		name, help string
		v          func() int64
	}{
		{"odek_schedule_fires_total", "Schedule fires whose job this process enqueued.", r.stats.Fired.Load},
		{"odek_schedule_missed_total", "Schedule fire times dropped or folded into one (missed-fire policy).", r.stats.Missed.Load},
		{"odek_schedule_inactive_total", "Schedule fires skipped outside their active hours.", r.stats.Inactive.Load},
		{"odek_schedule_busy_total", "Quiet check-ins skipped because their chat had a job queued or running.", r.stats.Busy.Load},
		{"odek_schedule_late_total", "Schedule fires enqueued later than the grace after their time.", r.stats.Late.Load},
		{"odek_schedule_claims_lost_total", "Schedule claims another process won first.", r.stats.Conflicts.Load},
		{"odek_schedule_reclaimed_total", "Pending schedule fires taken over after their lease ended.", r.stats.Reclaimed.Load},
		{"odek_schedule_failed_total", "Schedule fires whose job the queue refused for good.", r.stats.Failed.Load},
		{"odek_schedule_budget_refused_total", "Goal fires skipped because the owner's budget (chat or user, in the queue store) was spent.", r.stats.Budget.Load},
	}
	for _, c := range counters {
		v := c.v
		if err := add(c.name, c.help, func() float64 { return float64(v()) }); err != nil {
			return err
		}
	}
	var lagBits atomic.Uint64 // float64 seconds, summed
	if err := add("odek_schedule_fire_lag_seconds_total",
		"Seconds from fires' scheduled times to their jobs being enqueued, summed (divide by odek_schedule_fires_total for the mean).",
		func() float64 { return math.Float64frombits(lagBits.Load()) }); err != nil {
		return err
	}
	prev := r.Observe
	r.Observe = func(f Fire, d time.Duration, dup bool) {
		for {
			old := lagBits.Load()
			if lagBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d.Seconds())) {
				break
			}
		}
		if prev != nil {
			prev(f, d, dup)
		}
	}
	return nil
}
