package main_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStackStartRunsFirst checks that internal/stackstart is initialised
// before every package whose initialiser does real work: it exists to grow
// the main goroutine's stack before those run (GODEBUG=inittrace=1 prints
// one line per initialised package, in order, with what it allocated).
func TestStackStartRunsFirst(t *testing.T) {
	cmd := exec.Command(odekBin, "version")
	cmd.Env = append(cmd.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("odek version: %v\n%s", err, out)
	}
	seen := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		if f[1] == "github.com/odekrun/odek/internal/stackstart" {
			seen = true
			break
		}
		// Before it only the runtime's own packages and allocation-free
		// leaves may run.
		if !strings.Contains(line, " 0 bytes, 0 allocs") && f[1] != "runtime" {
			t.Errorf("initialised before stackstart and allocates: %s", line)
		}
	}
	if !seen {
		t.Fatalf("stackstart not initialised; inittrace:\n%s", out)
	}
}
