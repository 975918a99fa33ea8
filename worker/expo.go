package worker

import (
	"bufio"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// This file writes the Prometheus text exposition format (version 0.0.4)
// by hand: a worker exports a few dozen counters, gauges and histograms,
// and client_golang with its protobuf and procfs dependencies cost every
// odek command about 2 MiB of resident memory at start (docs/BENCHMARKS.md,
// issue 25), `odek run` included, which never serves metrics.

// histogram is a Prometheus histogram with at most one label.
type histogram struct {
	name, help, label string
	bounds            []float64

	mu     sync.Mutex
	series map[string]*histSeries // by label value ("" without a label)
}

type histSeries struct {
	counts []uint64 // per bound, not cumulative
	sum    float64
	count  uint64
}

func newHistogram(name, help, label string, bounds []float64) *histogram {
	return &histogram{name: name, help: help, label: label, bounds: bounds, series: map[string]*histSeries{}}
}

// observe adds v to the series of label value lv.
func (h *histogram) observe(lv string, v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[lv]
	if s == nil {
		s = &histSeries{counts: make([]uint64, len(h.bounds))}
		h.series[lv] = s
	}
	if i, _ := slices.BinarySearch(h.bounds, v); i < len(h.bounds) {
		s.counts[i]++
	}
	s.sum += v
	s.count++
}

func (h *histogram) write(e *expo) {
	e.header(h.name, h.help, "histogram")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.label == "" && h.series[""] == nil {
		h.series[""] = &histSeries{counts: make([]uint64, len(h.bounds))}
	}
	for _, lv := range sortedKeys(h.series) {
		s := h.series[lv]
		var cum uint64
		for i, b := range h.bounds {
			cum += s.counts[i]
			e.sample(h.name+"_bucket", h.label, lv, "le", formatFloat(b), float64(cum))
		}
		e.sample(h.name+"_bucket", h.label, lv, "le", "+Inf", float64(s.count))
		e.sample(h.name+"_sum", h.label, lv, "", "", s.sum)
		e.sample(h.name+"_count", h.label, lv, "", "", float64(s.count))
	}
}

// counterVec is a counter with one label.
type counterVec struct {
	name, help, label string

	mu     sync.Mutex
	values map[string]float64
}

func newCounterVec(name, help, label string) *counterVec {
	return &counterVec{name: name, help: help, label: label, values: map[string]float64{}}
}

func (c *counterVec) add(lv string, v float64) {
	c.mu.Lock()
	c.values[lv] += v
	c.mu.Unlock()
}

func (c *counterVec) write(e *expo) {
	e.header(c.name, c.help, "counter")
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, lv := range sortedKeys(c.values) {
		e.sample(c.name, c.label, lv, "", "", c.values[lv])
	}
}

// scalar is a counter or gauge read at scrape time.
type scalar struct {
	name, help, typ string // typ: counter or gauge
	value           func() float64
}

func (s scalar) write(e *expo) {
	e.header(s.name, s.help, s.typ)
	e.sample(s.name, "", "", "", "", s.value())
}

// expo writes one exposition.
type expo struct{ w *bufio.Writer }

func (e *expo) header(name, help, typ string) {
	e.w.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n# TYPE " + name + " " + typ + "\n")
}

// sample writes one line: name, up to two labels (skipped when their name
// is ""), value.
func (e *expo) sample(name, l1, v1, l2, v2 string, v float64) {
	e.w.WriteString(name)
	if l1 != "" || l2 != "" {
		e.w.WriteByte('{')
		if l1 != "" {
			e.w.WriteString(l1 + `="` + escapeLabel(v1) + `"`)
			if l2 != "" {
				e.w.WriteByte(',')
			}
		}
		if l2 != "" {
			e.w.WriteString(l2 + `="` + escapeLabel(v2) + `"`)
		}
		e.w.WriteByte('}')
	}
	e.w.WriteByte(' ')
	e.w.WriteString(formatFloat(v))
	e.w.WriteByte('\n')
}

// formatFloat renders v as the text format wants: shortest decimal,
// +Inf, -Inf, NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// escapeHelp and escapeLabel escape as the text format asks: a backslash
// and a newline in HELP text, and a double quote too in a label value.
// The replacer is made only for a string that needs it (rare), not as a
// package-level variable, which every odek process would build at start,
// `odek run` included.
func escapeHelp(s string) string {
	if !strings.ContainsAny(s, "\\\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeRuntime writes the Go runtime's and the process's own figures
// (the go_* and process_* names client_golang's collectors used, for the
// dashboards that read them).
func writeRuntime(e *expo) {
	scalar{"go_goroutines", "Number of goroutines that currently exist.", "gauge", func() float64 { return float64(runtime.NumGoroutine()) }}.write(e)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	scalar{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", "gauge", func() float64 { return float64(ms.HeapAlloc) }}.write(e)
	scalar{"go_memstats_sys_bytes", "Number of bytes obtained from system.", "gauge", func() float64 { return float64(ms.Sys) }}.write(e)
	scalar{"go_gc_cycles_total", "Number of completed GC cycles.", "counter", func() float64 { return float64(ms.NumGC) }}.write(e)
	if cpu, ok := processCPU(); ok { // expo_unix.go
		scalar{"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", func() float64 { return cpu }}.write(e)
	}
	if rss, ok := residentBytes(); ok {
		scalar{"process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", func() float64 { return float64(rss) }}.write(e)
	}
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, _ := d.Readdirnames(-1)
		d.Close()
		scalar{"process_open_fds", "Number of open file descriptors.", "gauge", func() float64 { return float64(len(names) - 1) }}.write(e)
	}
}

// residentBytes reads the resident set from /proc/self/statm (Linux).
func residentBytes() (int64, bool) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
