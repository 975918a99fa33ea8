package queuetest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them (a
// server's exit watcher, a client a helper did not close).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
