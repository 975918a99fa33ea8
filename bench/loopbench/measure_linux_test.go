package main

import (
	"errors"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// ballast keeps the parent's memory large while the children run.
var ballast []byte

// TestMeasureReportsTheChildsOwnPeak: a parent holding 96 MiB starts a
// child that touches 16 MiB (then one that touches 40). rusage's ru_maxrss would say ≥ 96 MiB (the
// parent's high-water mark, recorded at the child's exec); measure must
// say about 16.
func TestMeasureReportsTheChildsOwnPeak(t *testing.T) {
	ballast = make([]byte, 96<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	t.Cleanup(func() { ballast = nil })

	for _, mib := range []int{16, 40} {
		// dd fills one mib-sized buffer (and holds little else).
		dd, err := exec.LookPath("dd")
		if err != nil {
			t.Skip("no dd")
		}
		u, err := measure(exec.Command(dd, "if=/dev/zero", "of=/dev/null", "bs="+strconv.Itoa(mib)+"M", "count=1", "status=none"))
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("ptrace not permitted here: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if u.rssMiB < float64(mib) || u.rssMiB > float64(mib)+24 {
			t.Errorf("child touching %d MiB: peak %.1f MiB, want %d..%d (the parent holds 96)", mib, u.rssMiB, mib, mib+24)
		}
		if u.user+u.sys <= 0 {
			t.Errorf("child touching %d MiB: no CPU time reported", mib)
		}
	}
}

// TestMeasureReportsFailure: a child's non-zero exit is an error.
func TestMeasureReportsFailure(t *testing.T) {
	if _, err := measure(exec.Command("/bin/sh", "-c", "exit 3")); err == nil {
		t.Fatal("exit 3 reported as success")
	}
}

// TestMeasureThroughAWrapper: a shell that execs the program is measured
// as the program (the exec is an event stop, not a SIGTRAP delivered).
func TestMeasureThroughAWrapper(t *testing.T) {
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("no dd")
	}
	u, err := measure(exec.Command("/bin/sh", "-c", "exec "+dd+" if=/dev/zero of=/dev/null bs=24M count=1 status=none"))
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("ptrace not permitted here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if u.rssMiB < 24 || u.rssMiB > 48 {
		t.Errorf("peak %.1f MiB, want 24..48", u.rssMiB)
	}
}
