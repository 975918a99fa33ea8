//go:build soak

package worker_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

const soak = true

// TestFailoverManual is the load of TestFailoverUnderLoad through an
// operator's failover: CLUSTER FAILOVER on the replica (which pauses the
// old master until the replica caught up), and for Sentinel the procedure
// of docs/DEPLOY.md (CLIENT PAUSE WRITE on the master, then SENTINEL
// FAILOVER).
func TestFailoverManual(t *testing.T) {
	for _, mode := range []string{queue.ModeSentinel, queue.ModeCluster} {
		t.Run(mode, func(t *testing.T) {
			r := runFailover(t, mode, failoverManual)
			t.Logf("%s manual: all %d replies in %v", mode, r.jobs, r.total.Round(time.Millisecond))
		})
	}
}

// TestFailoverRecoveryTimes kills the master five times per mode (a fresh
// topology each time) under the load of TestFailoverUnderLoad, and logs the
// median and worst time from the kill to the first successful claim
// afterwards: the figures of docs/BENCHMARKS.md.
//
//	go test -tags soak -run FailoverRecoveryTimes -v ./worker/
func TestFailoverRecoveryTimes(t *testing.T) {
	modes := []string{queue.ModeSentinel, queue.ModeCluster}
	if m := os.Getenv("ODEK_REDIS_TOPOLOGIES"); m != "" {
		modes = strings.Split(m, ",")
	}
	for _, mode := range modes {
		var recs, fails []time.Duration
		for range 5 {
			t.Run(mode, func(t *testing.T) {
				r := runFailover(t, mode, failoverKill)
				recs, fails = append(recs, r.recovery), append(fails, r.failover)
			})
		}
		t.Logf("%s: kill → replica promoted (as the test polled it) %v", mode, fails)
		slices.Sort(recs)
		if len(recs) == 5 {
			t.Logf("%s: kill → first claim: median %v, worst %v (all %v)", mode, recs[2].Round(10*time.Millisecond), recs[4].Round(10*time.Millisecond), recs)
		}
	}
}
