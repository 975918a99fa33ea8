package mcpclient_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
	"github.com/sirupsen/logrus"
)

func benchClient(b *testing.B) *mcpclient.Client {
	cfg := mcptest.Config(b, "bench")
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	cfg.Logger = l
	return mcptest.Start(b, cfg)
}

// reportLatency adds p50/p99 and calls/s to the benchmark output.
func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "calls/s")
}

// BenchmarkEchoSequential measures one caller doing echo round trips over
// stdio against the fixture server.
func BenchmarkEchoSequential(b *testing.B) {
	c := benchClient(b)
	echoSequential(b, c)
}

// BenchmarkEchoConcurrent8 measures 8 concurrent callers sharing one
// server.
func BenchmarkEchoConcurrent8(b *testing.B) {
	c := benchClient(b)
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	const workers = 8
	b.ReportAllocs()
	b.ResetTimer()
	per := b.N / workers
	if per == 0 {
		per = 1
	}
	lats := make([][]time.Duration, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, per)
			for range per {
				t0 := time.Now()
				if _, err := c.Call(ctx, "echo", args); err != nil {
					b.Error(err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[w] = lat
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatency(b, slices.Concat(lats...), elapsed)
}

// BenchmarkEchoHTTP measures one caller doing echo round trips over
// Streamable HTTP against the fixture's HTTP front end on loopback (the
// side-by-side comparison with the SDK clients is bench/mcpsdk -http).
func BenchmarkEchoHTTP(b *testing.B) {
	cfg := mcptest.HTTPConfig(b, "bench", mcptest.HTTPFixture(b))
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	cfg.Logger = l
	c := mcptest.Start(b, cfg)
	echoSequential(b, c)
}

// echoSequential is one caller doing echo round trips on c, reporting
// calls/s and latency percentiles.
func echoSequential(b *testing.B, c *mcpclient.Client) {
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Call(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat, time.Since(start))
}
