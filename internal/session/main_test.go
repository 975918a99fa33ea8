package session_test

import (
	"os"
	"testing"

	"github.com/odekrun/odek/queue/queuetest"
)

// TestMain lets the Redis contract's three topologies (each its own
// processes) start and run side by side even on two CPUs: they mostly wait
// for replicas and cluster gossip (queuetest.RaiseParallel).
func TestMain(m *testing.M) {
	queuetest.RaiseParallel()
	os.Exit(m.Run())
}
