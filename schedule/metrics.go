package schedule

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds the runner's metrics to reg and makes the runner observe
// fire lag: odek_schedule_fires_total, _missed_total, _inactive_total,
// _late_total, _claims_lost_total, _reclaimed_total, _failed_total and the
// histogram odek_schedule_fire_lag_seconds (scheduled time to job
// enqueued). Call it before Run.
func (r *Runner) Register(reg prometheus.Registerer) error {
	r.init()
	counters := []struct {
		name, help string
		v          func() int64
	}{
		{"odek_schedule_fires_total", "Schedule fires whose job this process enqueued.", r.stats.Fired.Load},
		{"odek_schedule_missed_total", "Schedule fire times dropped or folded into one (missed-fire policy).", r.stats.Missed.Load},
		{"odek_schedule_inactive_total", "Schedule fires skipped outside their active hours.", r.stats.Inactive.Load},
		{"odek_schedule_late_total", "Schedule fires enqueued later than the grace after their time.", r.stats.Late.Load},
		{"odek_schedule_claims_lost_total", "Schedule claims another process won first.", r.stats.Conflicts.Load},
		{"odek_schedule_reclaimed_total", "Pending schedule fires taken over after their lease ended.", r.stats.Reclaimed.Load},
		{"odek_schedule_failed_total", "Schedule fires whose job the queue refused for good.", r.stats.Failed.Load},
	}
	for _, c := range counters {
		v := c.v
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, func() float64 { return float64(v()) })); err != nil {
			return err
		}
	}
	lag := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "odek_schedule_fire_lag_seconds",
		Help:    "Time from a fire's scheduled time to its job being enqueued.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 300}})
	if err := reg.Register(lag); err != nil {
		return err
	}
	prev := r.Observe
	r.Observe = func(f Fire, d time.Duration, dup bool) {
		lag.Observe(d.Seconds())
		if prev != nil {
			prev(f, d, dup)
		}
	}
	return nil
}
