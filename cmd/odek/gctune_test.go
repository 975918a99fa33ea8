package main

import (
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestTuneGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, tc := range []struct {
		args     []string
		userSet  bool
		want     int
		released bool // the start-up heap returned (a forced collection)
	}{
		{[]string{"run", "x"}, false, runGCPercent, true},
		{[]string{"continue"}, false, runGCPercent, true},
		{[]string{"subagent", "--goal", "g"}, false, runGCPercent, true},
		{[]string{"run", "x"}, true, 100, false}, // the operator's GOGC wins
		{[]string{"worker"}, false, 100, false},  // long-lived, many jobs: default
		{nil, false, 100, false},
	} {
		debug.SetGCPercent(100)
		before := forcedGCs()
		tuneGC(tc.args, tc.userSet)
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("%v (userSet %v): GC percent %d, want %d", tc.args, tc.userSet, got, tc.want)
		}
		if got := forcedGCs() > before; got != tc.released {
			t.Errorf("%v (userSet %v): start-up heap released %v, want %v", tc.args, tc.userSet, got, tc.released)
		}
	}
}

// forcedGCs counts the collections forced by the program
// (debug.FreeOSMemory, runtime.GC).
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
