package main

import (
	"testing"

	"github.com/odekrun/odek/queue"
)

func TestResultCodes(t *testing.T) {
	for _, tc := range []struct {
		res  queue.Result
		want int
	}{
		{queue.Result{Status: queue.StatusSucceeded}, 0},
		{queue.Result{Status: queue.StatusCanceled}, 130},
		{queue.Result{Status: queue.StatusFailed, ExitCode: 4}, 4},
		{queue.Result{Status: queue.StatusFailed}, 1},
		{queue.Result{Status: queue.StatusDeadLettered}, 1},
	} {
		if got := resultCode(tc.res); got != tc.want {
			t.Errorf("resultCode(%+v) = %d, want %d", tc.res, got, tc.want)
		}
	}
}
