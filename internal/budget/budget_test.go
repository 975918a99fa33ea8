package budget

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func f64(v float64) *float64 { return &v }

var t0 = time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)

// Each counting limit allows reaching the cap exactly and is exhausted one
// unit past it.
func TestTokenAndCostLimitsExactly(t *testing.T) {
	price := Prices{InputPerMillionUSD: f64(1_000_000), OutputPerMillionUSD: f64(2_000_000)} // $1 per input token, $2 per output token
	tests := []struct {
		name     string
		limits   Limits
		in, out  int
		wantErr  string // limit name or ""
		observed float64
	}{
		{"input at limit", Limits{MaxInputTokens: 100}, 100, 0, "", 0},
		{"input one over", Limits{MaxInputTokens: 100}, 101, 0, LimitInputTokens, 101},
		{"output at limit", Limits{MaxOutputTokens: 50}, 0, 50, "", 0},
		{"output one over", Limits{MaxOutputTokens: 50}, 0, 51, LimitOutputTokens, 51},
		{"cost at limit", Limits{MaxCostUSD: 10}, 4, 3, "", 0},
		{"cost one over", Limits{MaxCostUSD: 10}, 5, 3, LimitCostUSD, 11},
		{"unlimited", Limits{}, math.MaxInt32, math.MaxInt32, "", 0},
		{"input checked before output", Limits{MaxInputTokens: 1, MaxOutputTokens: 1}, 2, 2, LimitInputTokens, 2},
		{"negative counts ignored", Limits{MaxInputTokens: 1}, -5, -5, "", 0},
		{"total at limit", Limits{MaxTotalTokens: 100}, 60, 40, "", 0},
		{"total one over", Limits{MaxTotalTokens: 100}, 60, 41, LimitTotalTokens, 101},
		{"total after input and output", Limits{MaxInputTokens: 500, MaxOutputTokens: 500, MaxTotalTokens: 100}, 90, 90, LimitTotalTokens, 180},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.limits, price, true, t0)
			err := tr.AddUsage(tc.in, tc.out)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("AddUsage: %v, want nil", err)
				}
				return
			}
			var ee *ExceededError
			if !errors.As(err, &ee) || !errors.Is(err, ErrExceeded) {
				t.Fatalf("AddUsage: %v, want *ExceededError", err)
			}
			if ee.Limit != tc.wantErr || ee.Observed != tc.observed {
				t.Fatalf("got %s observed %g, want %s observed %g", ee.Limit, ee.Observed, tc.wantErr, tc.observed)
			}
		})
	}
}

// Tokens accumulate over responses: the call that crosses the cap fails.
func TestAddUsageAccumulates(t *testing.T) {
	tr := NewTracker(Limits{MaxInputTokens: 10}, Prices{}, false, t0)
	for i := range 10 {
		if err := tr.AddUsage(1, 0); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	err := tr.AddUsage(1, 0)
	var ee *ExceededError
	if !errors.As(err, &ee) || ee.Observed != 11 || ee.Max != 10 {
		t.Fatalf("11th token: %v", err)
	}
	if got := tr.Snapshot().InputTokens; got != 11 {
		t.Fatalf("snapshot input tokens %d, want 11 (recorded even when exceeded)", got)
	}
}

func TestToolCallLimitExactly(t *testing.T) {
	tests := []struct {
		name        string
		max         int
		batches     []int
		wantAllowed []int
		wantErrAt   int // index of the batch that errs, -1 none
	}{
		{"reach cap in one batch", 3, []int{3}, []int{3}, -1},
		{"one over in one batch", 3, []int{4}, []int{3}, 0},
		{"reach cap over batches", 3, []int{1, 2}, []int{1, 2}, -1},
		{"next batch after cap", 3, []int{3, 1}, []int{3, 0}, 1},
		{"partial batch", 3, []int{2, 3}, []int{2, 1}, 1},
		{"unlimited", 0, []int{1000, 1000}, []int{1000, 1000}, -1},
		{"empty batch", 1, []int{0, 1}, []int{0, 1}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(Limits{MaxToolCalls: tc.max}, Prices{}, false, t0)
			asked := 0
			for i, n := range tc.batches {
				asked += n
				got, err := tr.ReserveToolCalls(n)
				if got != tc.wantAllowed[i] {
					t.Fatalf("batch %d: allowed %d, want %d", i, got, tc.wantAllowed[i])
				}
				if (err != nil) != (i == tc.wantErrAt) {
					t.Fatalf("batch %d: err %v, want error: %v", i, err, i == tc.wantErrAt)
				}
				if err != nil {
					var ee *ExceededError
					if !errors.As(err, &ee) || ee.Limit != LimitToolCalls || ee.Observed != float64(asked) || ee.Max != float64(tc.max) {
						t.Fatalf("batch %d: %#v", i, err)
					}
				}
			}
		})
	}
}

func TestRuntimeLimitExactly(t *testing.T) {
	tr := NewTracker(Limits{MaxRuntime: 10 * time.Second}, Prices{}, false, t0)
	if err := tr.CheckRuntime(t0.Add(10*time.Second - time.Nanosecond)); err != nil {
		t.Fatalf("before deadline: %v", err)
	}
	err := tr.CheckRuntime(t0.Add(10 * time.Second))
	var ee *ExceededError
	if !errors.As(err, &ee) || ee.Limit != LimitRuntime || ee.Observed != 10 || ee.Max != 10 {
		t.Fatalf("at deadline: %v", err)
	}
	if d, ok := tr.Deadline(); !ok || !d.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("Deadline = %v, %v", d, ok)
	}
	un := NewTracker(Limits{}, Prices{}, false, t0)
	if _, ok := un.Deadline(); ok {
		t.Fatal("unlimited runtime has a deadline")
	}
	if err := un.CheckRuntime(t0.Add(1000 * time.Hour)); err != nil {
		t.Fatalf("unlimited: %v", err)
	}
}

func TestExceededErrorText(t *testing.T) {
	msg := (&ExceededError{Limit: LimitCostUSD, Observed: 1.25, Max: 1}).Error()
	for _, want := range []string{"cost_usd", "1.250000", "1.000000", "budget"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if !errors.Is(&ExceededError{}, ErrExceeded) || errors.Is(errors.New("x"), ErrExceeded) {
		t.Fatal("errors.Is mismatch")
	}
}

func TestPriceTableFor(t *testing.T) {
	table := PriceTable{
		Flat: Prices{InputPerMillionUSD: f64(1), OutputPerMillionUSD: f64(2)},
		Models: map[string]Prices{
			"big":     {InputPerMillionUSD: f64(10), OutputPerMillionUSD: f64(20)},
			"in-only": {InputPerMillionUSD: f64(5)},
		},
	}
	tests := []struct {
		name, model string
		table       PriceTable
		wantCost    float64 // for 1M in + 1M out
		wantKnown   bool
	}{
		{"exact model", "big", table, 30, true},
		{"missing output falls back", "in-only", table, 7, true},
		{"unknown model uses flat", "other", table, 3, true},
		{"prefix is not a match", "big-2", table, 3, true},
		{"no prices", "big", PriceTable{}, 0, false},
		{"model only, flat missing", "x", PriceTable{Models: map[string]Prices{"x": {OutputPerMillionUSD: f64(4)}}}, 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, known := tc.table.For(tc.model)
			if known != tc.wantKnown {
				t.Fatalf("known %v, want %v", known, tc.wantKnown)
			}
			if got := Cost(p, 1_000_000, 1_000_000); math.Abs(got-tc.wantCost) > 1e-9 {
				t.Fatalf("cost %g, want %g", got, tc.wantCost)
			}
		})
	}
}

func TestCostCapInactive(t *testing.T) {
	if !NewTracker(Limits{MaxCostUSD: 1}, Prices{}, false, t0).CostCapInactive() {
		t.Fatal("cap without prices must report inactive")
	}
	tr := NewTracker(Limits{MaxCostUSD: 1}, Prices{}, false, t0)
	if err := tr.AddUsage(1e9, 1e9); err != nil || tr.Snapshot().CostUSD != 0 {
		t.Fatalf("unknown prices: %v, cost %g", err, tr.Snapshot().CostUSD)
	}
	if NewTracker(Limits{MaxCostUSD: 1}, Prices{InputPerMillionUSD: f64(1)}, true, t0).CostCapInactive() {
		t.Fatal("cap with prices reported inactive")
	}
}

func TestTrackerConcurrent(t *testing.T) {
	tr := NewTracker(Limits{MaxToolCalls: 50}, Prices{InputPerMillionUSD: f64(1)}, true, t0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 20 {
		wg.Go(func() {
			for range 10 {
				n, _ := tr.ReserveToolCalls(1)
				_ = tr.AddUsage(1, 1)
				mu.Lock()
				total += n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if total != 50 || tr.Snapshot().ToolCalls != 50 || tr.Snapshot().InputTokens != 200 {
		t.Fatalf("allowed %d, snapshot %+v", total, tr.Snapshot())
	}
}

func TestMergeLimits(t *testing.T) {
	op := Limits{MaxRuntime: time.Minute, MaxToolCalls: 10, MaxCostUSD: 1}
	tests := []struct {
		name      string
		op, proj  Limits
		want      Limits
		wantWarns []string
	}{
		{"project absent", op, Limits{}, op, nil},
		{"project lowers", op, Limits{MaxRuntime: time.Second, MaxToolCalls: 3, MaxCostUSD: 0.5}, Limits{MaxRuntime: time.Second, MaxToolCalls: 3, MaxCostUSD: 0.5}, nil},
		{"project equal", op, op, op, nil},
		{"project higher clamped", op, Limits{MaxToolCalls: 11, MaxCostUSD: 2}, op, []string{"max_tool_calls", "max_cost_usd"}},
		{"project adds missing", op, Limits{MaxInputTokens: 5, MaxOutputTokens: 6}, Limits{MaxRuntime: time.Minute, MaxToolCalls: 10, MaxCostUSD: 1, MaxInputTokens: 5, MaxOutputTokens: 6}, nil},
		{"runtime clamped", op, Limits{MaxRuntime: time.Hour}, op, []string{"max_runtime_seconds"}},
		{"total tokens lowered", Limits{MaxTotalTokens: 1000}, Limits{MaxTotalTokens: 300}, Limits{MaxTotalTokens: 300}, nil},
		{"total tokens clamped", Limits{MaxTotalTokens: 300}, Limits{MaxTotalTokens: 1000}, Limits{MaxTotalTokens: 300}, []string{"max_total_tokens"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warns := MergeLimits(tc.op, tc.proj)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if len(warns) != len(tc.wantWarns) {
				t.Fatalf("warnings %q, want ones naming %q", warns, tc.wantWarns)
			}
			for i, w := range tc.wantWarns {
				if !strings.Contains(warns[i], w) || !strings.Contains(warns[i], "clamped") {
					t.Errorf("warning %q lacks %q", warns[i], w)
				}
			}
		})
	}
}

func TestCostCached(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name            string
		p               Prices
		in, cached, out int
		want            float64
	}{
		{"no cache", Prices{InputPerMillionUSD: f(2), OutputPerMillionUSD: f(8)}, 1e6, 0, 1e6, 10},
		{"cached at its price", Prices{InputPerMillionUSD: f(2), OutputPerMillionUSD: f(8), CachedInputPerMillionUSD: f(0.5)}, 1e6, 8e5, 0, 0.4 + 0.4},
		{"cached without a price is full input", Prices{InputPerMillionUSD: f(2)}, 1e6, 8e5, 0, 2},
		{"cached clamped to input", Prices{InputPerMillionUSD: f(2), CachedInputPerMillionUSD: f(1)}, 1e6, 5e6, 0, 1},
		{"negative cached is none", Prices{InputPerMillionUSD: f(2), CachedInputPerMillionUSD: f(1)}, 1e6, -5, 0, 2},
		{"only a cached price", Prices{CachedInputPerMillionUSD: f(1)}, 1e6, 5e5, 0, 0.5},
	}
	for _, tt := range tests {
		if got := CostCached(tt.p, tt.in, tt.cached, tt.out); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: CostCached = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPriceTableCachedShare(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tab := PriceTable{Flat: Prices{InputPerMillionUSD: f(1)}, CachedShare: 0.1,
		Models: map[string]Prices{"own": {CachedInputPerMillionUSD: f(0.5)}, "dear": {InputPerMillionUSD: f(10)}}}
	for model, want := range map[string]float64{"other": 0.1, "own": 0.5, "dear": 1} {
		p, _ := tab.For(model)
		if p.CachedInputPerMillionUSD == nil || math.Abs(*p.CachedInputPerMillionUSD-want) > 1e-12 {
			t.Errorf("%s: cached price %v, want %v", model, p.CachedInputPerMillionUSD, want)
		}
	}
	if p, _ := (PriceTable{Flat: Prices{InputPerMillionUSD: f(1)}}).For("m"); p.CachedInputPerMillionUSD != nil {
		t.Errorf("without a share the cached price stays unknown (full input price), got %v", *p.CachedInputPerMillionUSD)
	}
}

func TestTrackerCachedUsage(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tr := NewTracker(Limits{MaxCostUSD: 1}, Prices{InputPerMillionUSD: f(10), CachedInputPerMillionUSD: f(1)}, true, time.Now())
	// 100k input, 90k of it cached: 10k×10 + 90k×1 = $0.19 (uncached would be $1.00).
	if err := tr.AddUsageCached(100_000, 90_000, 0); err != nil {
		t.Fatal(err)
	}
	u := tr.Snapshot()
	if u.InputTokens != 100_000 || u.CachedInputTokens != 90_000 || math.Abs(u.CostUSD-0.19) > 1e-9 {
		t.Errorf("snapshot %+v", u)
	}
	// Without the cache the same usage would be over the cap.
	tr2 := NewTracker(Limits{MaxCostUSD: 1}, Prices{InputPerMillionUSD: f(10)}, true, time.Now())
	if err := tr2.AddUsage(100_001, 0); err == nil {
		t.Error("uncached usage over the cap passed")
	}
}
