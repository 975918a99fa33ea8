package session_test

import (
	"testing"

	"github.com/odekrun/odek/queue/queuetest"
)

// TestMain lets the Redis contract's three topologies (each its own
// processes) start and run side by side even on two CPUs: they mostly wait
// for replicas and cluster gossip.
func TestMain(m *testing.M) { queuetest.Main(m) }
