package queue

import (
	"testing"
	"time"
)

func TestDecideReclaim(t *testing.T) {
	for _, c := range []struct {
		attempt, max int
		canceled     bool
		want         reclaimAction
	}{
		{0, 3, false, reclaimRetry}, // died beside other jobs only: no strike
		{1, 3, false, reclaimRetry},
		{2, 3, false, reclaimRetry},
		{3, 3, false, reclaimDead},
		{4, 3, false, reclaimDead},
		{1, 1, false, reclaimDead},
		{1, 3, true, reclaimCancel},
		{3, 3, true, reclaimCancel}, // cancel wins over dead-lettering
	} {
		if got := decideReclaim(c.attempt, c.max, c.canceled); got != c.want {
			t.Errorf("decideReclaim(%d, %d, %v) = %v, want %v", c.attempt, c.max, c.canceled, got, c.want)
		}
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"": false, "abc": true, "a-b_c.d:e": true, "a b": false, `a"b`: false, "é": false,
		string(make([]byte, MaxIDLen+1)): false,
	} {
		if validID(id) != want {
			t.Errorf("validID(%q) = %v, want %v", id, !want, want)
		}
	}
}

func TestReclaimInterval(t *testing.T) {
	for lease, want := range map[time.Duration]time.Duration{
		30 * time.Second:       time.Second,
		4 * time.Second:        time.Second,
		2 * time.Second:        500 * time.Millisecond,
		100 * time.Millisecond: 25 * time.Millisecond,
	} {
		if got := reclaimInterval(lease); got != want {
			t.Errorf("reclaimInterval(%v) = %v, want %v", lease, got, want)
		}
	}
}

func TestBlockSlice(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		name        string
		end, ctxEnd time.Time
		want        time.Duration
	}{
		{"long wait is sliced", now.Add(time.Minute), time.Time{}, maxBlockSlice},
		{"short wait", now.Add(40 * time.Millisecond), time.Time{}, 40 * time.Millisecond},
		{"ctx deadline first", now.Add(time.Minute), now.Add(30 * time.Millisecond), 30 * time.Millisecond},
		{"wait over", now, time.Time{}, -1},
		{"sub-millisecond never becomes BLOCK 0", now.Add(500 * time.Microsecond), time.Time{}, -1},
		{"ctx already past", now.Add(time.Minute), now.Add(-time.Second), -1},
	} {
		if got := blockSlice(now, c.end, c.ctxEnd); got != c.want {
			t.Errorf("%s: blockSlice = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRetryDelay pins WaitRedis's documented waits: 250 ms doubling to
// 15 s, scaled by 0.5..1 with the jitter.
func TestRetryDelay(t *testing.T) {
	const base, max = 250 * time.Millisecond, 15 * time.Second
	for _, tc := range []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{1, 0, 125 * time.Millisecond},
		{1, 0.5, 187500 * time.Microsecond},
		{2, 0, 250 * time.Millisecond},
		{7, 0, 7500 * time.Millisecond}, // 16 s capped at 15 s
		{100, 0.999, 14992500 * time.Microsecond},
	} {
		if got := retryDelay(tc.attempt, base, max, tc.jitter); got != tc.want {
			t.Errorf("retryDelay(%d, %v) = %v, want %v", tc.attempt, tc.jitter, got, tc.want)
		}
	}
}
