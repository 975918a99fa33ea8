package worker

import (
	"time"

	"github.com/odekrun/odek/internal/backoff"
)

// Backoff is the wait before retry number attempt (1-based) of a failed
// queue call: base doubled per attempt, capped at cap, with the upper
// quarter of the wait spread by jitter (a number in [0, 1)) so that many
// workers reconnecting after one Redis outage do not stampede. attempt < 1
// is treated as 1; base <= 0 means 50 ms. Pure, so it has a table test.
func Backoff(attempt int, base, cap time.Duration, jitter float64) time.Duration {
	if base <= 0 {
		base = 50 * time.Millisecond
	}
	return backoff.Delay(attempt, base, cap, 0.25, jitter)
}
