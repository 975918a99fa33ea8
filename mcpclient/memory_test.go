package mcpclient_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
	"github.com/sirupsen/logrus"
)

// TestHugeLineMemoryBounded proves the fail-closed line limit holds
// memory: while the server sends a 200 MiB line against the default
// 10 MiB limit, the bytes this process allocates in total (an upper bound
// of its peak heap growth) stay under 2× the limit.
func TestHugeLineMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 200 MiB through a pipe")
	}
	cfg := mcptest.Config(t, "huge", "-chaos")
	quiet := logrus.New()
	quiet.Out = nopWriter{}
	cfg.Logger = quiet
	c := mcptest.Start(t, cfg)
	call(t, c, "echo", `{"text":"warm"}`)

	limit := c.Limits().MaxResponseBytes
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Call(bg, "huge_line", []byte(`{"mib":200}`))
	runtime.ReadMemStats(&after)
	var lt *mcpclient.LineTooLongError
	if !errors.As(err, &lt) || lt.Limit != 10<<20 {
		t.Fatalf("err = %v", err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MiB in total while rejecting a 200 MiB line (limit %d MiB)", float64(allocated)/(1<<20), limit>>20)
	if allocated >= uint64(2*limit) {
		t.Fatalf("allocated %d bytes, want < 2× limit = %d", allocated, 2*limit)
	}
}

// BenchmarkHugeLinePeakRSS reports the peak resident set growth of this
// process while a server sends a 200 MiB line against a 10 MiB limit
// (Linux: VmHWM after resetting it through /proc/self/clear_refs).
func BenchmarkHugeLinePeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
	cfg := mcptest.Config(b, "huge", "-chaos")
	quiet := logrus.New()
	quiet.Out = nopWriter{}
	cfg.Logger = quiet
	var worst int64
	for b.Loop() {
		c, err := mcpclient.Start(bg, cfg) // a fresh server: the last one was closed
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Call(bg, "echo", []byte(`{"text":"warm"}`)); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		base := procStatusKiB(b, "VmRSS")
		if _, err := c.Call(bg, "huge_line", []byte(`{"mib":200}`)); err == nil {
			b.Fatal("huge line accepted")
		}
		worst = max(worst, procStatusKiB(b, "VmHWM")-base)
		c.Close(bg)
	}
	b.ReportMetric(float64(worst)/1024, "peak-RSS-MiB-above-baseline")
	b.ReportMetric(float64(mcpclient.DefaultMaxResponseBytes>>20), "limit-MiB")
}

func procStatusKiB(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(field+":")); ok {
			n, _ := strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			return n
		}
	}
	b.Fatalf("%s not in /proc/self/status", field)
	return 0
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
