package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every subcommand of the table has one usage line, a runner, and the
// usage lists them in the table's order; an unknown one is refused with
// exit 3 before anything connects.
func TestQueueSubcommandsFromOneTable(t *testing.T) {
	seen := map[string]bool{}
	last := -1
	for _, s := range queueSubs {
		if seen[s.name] {
			t.Errorf("%q twice", s.name)
		}
		seen[s.name] = true
		if !strings.HasPrefix(s.usage, s.name) || (s.run == nil) == !s.noConnect {
			t.Errorf("%q: usage %q, run set %v, noConnect %v", s.name, s.usage, s.run != nil, s.noConnect)
		}
		i := strings.Index(queueUsage(), "  odek queue "+s.name+" ")
		if i <= last {
			t.Errorf("%q not in the usage after the previous subcommand", s.name)
		}
		last = i
	}
	var stderr bytes.Buffer
	err := cmdQueue(context.Background(), []string{"nope"}, nil, &bytes.Buffer{}, &stderr)
	if exitCode(err) != exitSetup || !strings.Contains(stderr.String(), "odek queue stats") {
		t.Fatalf("unknown subcommand: %v (exit %d), stderr %q", err, exitCode(err), stderr.String())
	}
}
