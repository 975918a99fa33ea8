package worker

import "time"

// Backoff is the wait before retry number attempt (1-based) of a failed
// queue call: base doubled per attempt, capped at cap, with the upper
// quarter of the wait spread by jitter (a number in [0, 1)) so that many
// workers reconnecting after one Redis outage do not stampede. attempt < 1
// is treated as 1. Pure, so it has a table test.
func Backoff(attempt int, base, cap time.Duration, jitter float64) time.Duration {
	if base <= 0 {
		base = 50 * time.Millisecond
	}
	if cap < base {
		cap = base
	}
	d := base
	for i := 1; i < attempt && d < cap; i++ {
		d *= 2
	}
	d = min(d, cap)
	if jitter < 0 || jitter >= 1 {
		jitter = 0
	}
	q := d / 4
	return d - q + time.Duration(float64(q)*jitter)
}
