//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// A Jail ends a job by its process groups: nothing it starts may leave
// its group (setsid and setpgid are refused), and Close kills every group.
func TestJailFallbackEndsTheJob(t *testing.T) {
	requireLandlock(t)
	base := fmt.Sprintf("%d.%06d", 5000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	marker, other := base+"1", base+"2"
	j := newJail(t, Settings{})
	a, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := startIn(t, a, j.spec, survivorScript(marker)+"; "+python3+" -c 'import os; os.setpgid(0, 0)' 2>&1 | tail -1; setsid true 2>&1; true")
	if !strings.Contains(out, "PermissionError: [Errno 1] Operation not permitted") || !strings.Contains(out, "setsid failed: Operation not permitted") {
		t.Errorf("setpgid or setsid was not refused:\n%s", out)
	}
	startIn(t, b, j.spec, fmt.Sprintf("sleep %s >/dev/null 2>&1 &", other))
	deadline := time.Now().Add(10 * time.Second)
	for len(alive(t, marker)) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// The setsid one never started: setsid(2) is refused.
	if n := len(alive(t, marker)); n != 3 {
		t.Fatalf("%d survivors before Close, want 3:\n%s", n, out)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := waitGone(t, marker); len(pids) > 0 {
		t.Errorf("processes of the closed job live on: %v", pids)
	}
	if len(alive(t, other)) != 1 {
		t.Errorf("the other job's process was killed")
	}
	b.Close()
	if pids := waitGone(t, other); len(pids) > 0 {
		t.Errorf("the other job's process lives on after its Close: %v", pids)
	}
}
