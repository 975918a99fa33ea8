package queuetest

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// WaitBoundParallel is the -test.parallel that RaiseParallel sets.
// The tests of the packages that call it spend their time waiting: for
// redis-server, for leases to expire, for sentinels and cluster gossip.
// With Go's default (GOMAXPROCS, 2 on the project's CI machine) their
// parallel subtests would wait two at a time while the CPU idles.
func WaitBoundParallel() int { return max(8, runtime.GOMAXPROCS(0)) }

// RaiseParallel, called from a package's TestMain before m.Run, sets
// -test.parallel to WaitBoundParallel unless the command line set
// -parallel itself (an explicit value always wins). It parses the flags,
// which m.Run would otherwise do.
func RaiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(WaitBoundParallel())); err != nil {
			panic("queuetest: set -test.parallel: " + err.Error())
		}
	}
}

// Main is the TestMain of a package whose tests mostly wait (on
// redis-server, leases, fsync): it raises -test.parallel (RaiseParallel)
// and runs the tests.
func Main(m *testing.M) {
	RaiseParallel()
	os.Exit(m.Run())
}
