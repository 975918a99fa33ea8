package main

import (
	"runtime"
	"testing"
)

func TestTuneScheduler(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	for _, tc := range []struct {
		args    []string
		userSet bool
		want    int
	}{
		{[]string{"run", "x"}, false, 1},
		{[]string{"continue"}, false, 1},
		{[]string{"subagent", "--goal", "g"}, false, 1},
		{[]string{"run", "x"}, true, 3}, // the operator's GOMAXPROCS wins
		{[]string{"worker"}, false, 3},  // many jobs at once: default
		{nil, false, 3},
	} {
		runtime.GOMAXPROCS(3)
		tuneScheduler(tc.args, tc.userSet)
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("%v (userSet %v): GOMAXPROCS %d, want %d", tc.args, tc.userSet, got, tc.want)
		}
	}
}
