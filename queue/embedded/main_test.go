package embedded_test

import (
	"testing"

	"github.com/odekrun/odek/queue/queuetest"
)

// TestMain lets more parallel subtests run at once than there are CPUs:
// the conformance suite's subtests, each on a store file of its own,
// mostly wait for leases to expire and for fsync.
func TestMain(m *testing.M) { queuetest.Main(m) }
