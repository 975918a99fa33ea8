// Package backoff computes the wait before a retry: exponential growth from
// a base, a cap, and jitter over a chosen share of the wait. It is one pure
// function so every caller (queue reconnects, worker queue calls, LLM
// retries, MCP restarts and stream reconnects) shares one tested formula
// and keeps its own documented delays as parameters.
package backoff

import (
	"context"
	"math"
	"time"
)

// Delay is the wait before retry number attempt (1 = after the first
// failure): base·2^(attempt-1), capped at max, of which the last spread
// share (0 = none, 0.5 = "equal jitter", 1 = all of it) is scaled by
// rand01 ∈ [0, 1), so concurrent clients spread out while no wait drops
// below (1-spread) of the exponential value.
//
// attempt < 1 counts as 1; base <= 0 gives 0; max < base caps at base;
// spread outside [0, 1] is clamped; rand01 outside [0, 1) or NaN counts as
// 0. Delay never overflows, whatever attempt is.
func Delay(attempt int, base, max time.Duration, spread, rand01 float64) time.Duration {
	if base <= 0 {
		return 0
	}
	if max < base {
		max = base
	}
	if attempt < 1 {
		attempt = 1
	}
	d := max
	if attempt-1 < 62 {
		if f := float64(base) * math.Exp2(float64(attempt-1)); f < float64(max) {
			d = time.Duration(f)
		}
	}
	switch {
	case !(spread > 0): // also NaN
		return d
	case spread > 1:
		spread = 1
	}
	if !(rand01 >= 0 && rand01 < 1) {
		rand01 = 0
	}
	q := time.Duration(float64(d) * spread)
	return d - q + time.Duration(float64(q)*rand01)
}

// Sleep waits d, or until ctx is done, whichever comes first; it returns
// ctx.Err() when ctx ended the wait (d <= 0 returns ctx.Err() at once).
// The one context-aware wait of every retry loop.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
