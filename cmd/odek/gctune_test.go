package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, tc := range []struct {
		args    []string
		userSet bool
		want    int
	}{
		{[]string{"run", "x"}, false, runGCPercent},
		{[]string{"continue"}, false, runGCPercent},
		{[]string{"subagent", "--goal", "g"}, false, runGCPercent},
		{[]string{"run", "x"}, true, 100}, // the operator's GOGC wins
		{[]string{"worker"}, false, 100},  // long-lived, many jobs: default
		{nil, false, 100},
	} {
		debug.SetGCPercent(100)
		tuneGC(tc.args, tc.userSet)
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("%v (userSet %v): GC percent %d, want %d", tc.args, tc.userSet, got, tc.want)
		}
	}
}
