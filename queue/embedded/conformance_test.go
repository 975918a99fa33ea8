package embedded_test

import (
	"path/filepath"
	"testing"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/queue/queuetest"
)

func openT(t testing.TB, path string, o queue.Options) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, o queue.Options) queue.Queue {
		return openT(t, filepath.Join(t.TempDir(), "store.db"), o)
	})
}
