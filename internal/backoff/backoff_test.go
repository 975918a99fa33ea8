package backoff

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		attempt   int
		base, max time.Duration
		spread    float64
		rand      float64
		want      time.Duration
	}{
		{1, 100 * ms, time.Second, 0, 0.9, 100 * ms}, // no jitter
		{2, 100 * ms, time.Second, 0, 0, 200 * ms},
		{4, 100 * ms, time.Second, 0, 0, 800 * ms},
		{5, 100 * ms, time.Second, 0, 0, time.Second}, // 1.6 s capped
		{0, 100 * ms, time.Second, 0, 0, 100 * ms},    // attempt < 1 is 1
		{-5, 100 * ms, time.Second, 0, 0, 100 * ms},
		{1 << 40, 100 * ms, time.Second, 0, 0, time.Second}, // no overflow
		{math.MaxInt, 100 * ms, time.Second, 0, 0, time.Second},
		{1, 0, time.Second, 0.5, 0.5, 0},       // no base, no wait
		{1, -ms, time.Second, 0.5, 0.5, 0},     //
		{3, 100 * ms, 50 * ms, 0, 0, 100 * ms}, // max below base: base
		{1, 100 * ms, time.Second, 0.5, 0, 50 * ms},
		{1, 100 * ms, time.Second, 0.5, 0.5, 75 * ms},
		{3, 500 * ms, 30 * time.Second, 0.5, 0.999, 1999 * ms},
		{1, 100 * ms, time.Second, 0.25, 0, 75 * ms},
		{1, 100 * ms, time.Second, 0.25, 0.5, 87500 * time.Microsecond},
		{1, 100 * ms, time.Second, 1, 0.5, 50 * ms}, // all of it jittered
		{1, 100 * ms, time.Second, 3, 0.5, 50 * ms}, // spread clamped to 1
		{1, 100 * ms, time.Second, -1, 0.5, 100 * ms},
		{1, 100 * ms, time.Second, math.NaN(), 0.5, 100 * ms},
		{1, 100 * ms, time.Second, 0.5, 1, 50 * ms}, // rand out of range is 0
		{1, 100 * ms, time.Second, 0.5, -0.1, 50 * ms},
		{1, 100 * ms, time.Second, 0.5, math.NaN(), 50 * ms},
	} {
		if got := Delay(tc.attempt, tc.base, tc.max, tc.spread, tc.rand); got != tc.want {
			t.Errorf("Delay(%d, %v, %v, %v, %v) = %v, want %v", tc.attempt, tc.base, tc.max, tc.spread, tc.rand, got, tc.want)
		}
	}
}

// TestDelayBounds: for any attempt and rand the wait lies in
// [(1-spread)·d, d] and grows with attempt for a fixed rand.
func TestDelayBounds(t *testing.T) {
	const base, max = 250 * time.Millisecond, 15 * time.Second
	for _, spread := range []float64{0, 0.25, 0.5, 1} {
		prev := time.Duration(0)
		for a := 1; a < 80; a++ {
			d := Delay(a, base, max, spread, 0.7)
			hi := Delay(a, base, max, 0, 0)
			if d > hi || float64(d) < (1-spread)*float64(hi)-1 || d < prev {
				t.Fatalf("spread %v attempt %d: %v outside [%v, %v] or below the previous %v", spread, a, d, time.Duration((1-spread)*float64(hi)), hi, prev)
			}
			prev = d
		}
	}
}

func FuzzDelay(f *testing.F) {
	f.Add(1, int64(time.Second), int64(30*time.Second), 0.5, 0.3)
	f.Add(-3, int64(-1), int64(0), math.Inf(1), math.NaN())
	f.Fuzz(func(t *testing.T, attempt int, base, max int64, spread, r float64) {
		d := Delay(attempt, time.Duration(base), time.Duration(max), spread, r)
		limit := time.Duration(max)
		if limit < time.Duration(base) {
			limit = time.Duration(base)
		}
		if d < 0 || base > 0 && d > limit {
			t.Fatalf("Delay(%d, %d, %d, %v, %v) = %v, outside [0, %v]", attempt, base, max, spread, r, d, limit)
		}
	})
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("completed wait: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled wait: %v", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("zero wait on a done ctx: %v", err)
	}
	if err := Sleep(context.Background(), -time.Second); err != nil {
		t.Fatalf("negative wait: %v", err)
	}
}
