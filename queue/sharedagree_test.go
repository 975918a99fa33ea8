package queue

import (
	"strings"
	"testing"
	"time"
)

func TestAgreeShared(t *testing.T) {
	stored := SharedConfig{LeaseTTL: 30 * time.Second, MaxAttempts: 3}
	mine := SharedConfig{LeaseTTL: 10 * time.Second, MaxAttempts: 5}
	for _, tc := range []struct {
		name     string
		mine     SharedConfig
		explicit SharedExplicit
		clashes  []string
	}{
		{"defaults adopt the queue's", mine, SharedExplicit{}, nil},
		{"an explicit equal value agrees", stored, SharedExplicit{LeaseTTL: true, MaxAttempts: true}, nil},
		{"explicit lease differs", mine, SharedExplicit{LeaseTTL: true}, []string{"--lease 10s (the queue's is 30s)"}},
		{"both differ", mine, SharedExplicit{LeaseTTL: true, MaxAttempts: true}, []string{"--lease 10s (the queue's is 30s)", "--max-attempts 5 (the queue's is 3)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, clash := AgreeShared(stored, tc.mine, tc.explicit)
			if got != stored {
				t.Errorf("runs with %+v, want the stored %+v", got, stored)
			}
			if len(clash) != len(tc.clashes) {
				t.Fatalf("clashes %v, want %v", clash, tc.clashes)
			}
			for i, c := range clash {
				if c.String() != tc.clashes[i] {
					t.Errorf("clash %d = %q, want %q", i, c.String(), tc.clashes[i])
				}
			}
		})
	}
	err := SharedClashError("p:", []SharedClash{{"lease", "10s", "30s"}})
	if !strings.Contains(err.Error(), "--lease 10s (the queue's is 30s) disagrees with the shared config in {p}:config") {
		t.Errorf("error: %v", err)
	}
}
