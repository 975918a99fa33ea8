package embedded_test

import (
	"os"
	"testing"

	"github.com/odekrun/odek/queue/queuetest"
)

// TestMain lets more parallel subtests run at once than there are CPUs:
// the conformance suite's subtests, each on a store file of its own,
// mostly wait for leases to expire and for fsync (queuetest.RaiseParallel).
func TestMain(m *testing.M) {
	queuetest.RaiseParallel()
	os.Exit(m.Run())
}
