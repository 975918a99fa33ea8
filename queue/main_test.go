package queue_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: the
// coalescer's sender, a blocked read, a client's background reload or a
// redis-server's reaper that a test left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
