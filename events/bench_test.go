package events

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchEvent is a typical tool_call_completed event; its line is about
// 260 bytes.
func benchEvent() *Event {
	return &Event{
		Schema: Schema, Type: ToolCallCompleted, Seq: 1, RunID: testRunID, SessionID: "sess-0001",
		Iteration: 3, Tool: "log-analyzer__summarize", Timestamp: time.Date(2026, 8, 7, 12, 0, 0, 123456789, time.UTC),
		Data: map[string]any{"call_id": "call_0123456789", "duration_ms": 412, "result_bytes": 812, "artifact_count": 1},
	}
}

// BenchmarkFileSink measures FileSink.Write with its per-event fdatasync.
// Compare with BenchmarkRawWriteFsync on the same disk (both use the
// benchmark's temporary directory; set TMPDIR to choose the disk).
func BenchmarkFileSink(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts FileOptions
	}{{"fdatasync", FileOptions{}}, {"nosync", FileOptions{NoSync: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := OpenFile(filepath.Join(b.TempDir(), "events.jsonl"), bc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ev := benchEvent()
			line, _ := json.Marshal(ev)
			b.SetBytes(int64(len(line) + 1))
			b.ReportAllocs()
			for b.Loop() {
				ev.Seq++
				if err := s.Write(ev); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkRawWriteFsync is the floor for BenchmarkFileSink: one write(2)
// of a ready line of the same size plus fdatasync, nothing else.
func BenchmarkRawWriteFsync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line, _ := json.Marshal(benchEvent())
	line = append(line, '\n')
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := datasync(f); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEmit measures Emit into a sink that discards, with typical data
// and a redaction function that scans every string. Drops are reported per
// emitted event; with a 1024-event buffer the drain keeps up.
func BenchmarkEmit(b *testing.B) {
	redact := func(s string) string {
		if strings.Contains(s, "hunter2") {
			return strings.ReplaceAll(s, "hunter2", "[REDACTED]")
		}
		return s
	}
	data := map[string]any{
		"call_id": "call_0123456789", "args_sha256": strings.Repeat("ab", 32), "args_bytes": 120,
		"args_summary": map[string]any{"argv0": "go", "class": "code_execution"},
	}
	for _, bc := range []struct {
		name   string
		redact func(string) string
	}{{"redact", redact}, {"no-redact", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			e := NewEmitter(testRunID, SinkFunc(func(*Event) error { return nil }), Options{Redact: bc.redact})
			b.ReportAllocs()
			for b.Loop() {
				e.Emit(ToolCallStarted, 3, "shell", data)
			}
			if err := e.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(e.Dropped())/float64(b.N), "dropped/op")
		})
	}
}
