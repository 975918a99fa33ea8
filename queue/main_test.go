package queue_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/odekrun/odek/queue/queuetest"
)

// TestMain fails the package's tests when a goroutine outlives them: the
// coalescer's sender, a blocked read, a client's background reload or a
// redis-server's reaper that a test left running. Its parallel tests
// mostly wait on servers and leases, so more of them run at once than
// there are CPUs (queuetest.RaiseParallel).
func TestMain(m *testing.M) {
	queuetest.RaiseParallel()
	goleak.VerifyTestMain(m)
}
