package telemetry_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/telemetry"
)

// A full batch is exported as soon as its last span ends, not at the next
// ScheduleWait tick (an hour here): OnEnd kicks the export goroutine when
// the batch fills, and only then (issue 24's per-span wake-ups).
func TestQueueExportsFullBatchWithoutTimer(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, func(c *telemetry.Config) { c.BatchSize = 4; c.ScheduleWait = time.Hour }, telemetry.Options{})
	for range 4 {
		_, s := telemetry.StartTool(context.Background(), "shell", "")
		s.End()
	}
	deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a timing assertion
	for len(r.Spans()) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("full batch not exported: %d spans at the receiver, stats %+v", len(r.Spans()), p.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Fewer than a batch waits for the timer or a flush, and is not lost.
	_, s := telemetry.StartTool(context.Background(), "shell", "")
	s.End()
	if st := p.Stats(); st.Queued != 5 || st.Dropped != 0 {
		t.Fatalf("stats = %+v, want 5 queued, none dropped", st)
	}
	if n := len(flush(t, r, p)); n != 5 {
		t.Fatalf("after ForceFlush the receiver has %d spans, want 5", n)
	}
}

// Model and tool call spans wait for the export encoded (liteSpan), the
// others as the SDK's snapshots: a drain splits both into batches of at
// most BatchSize spans, and every span arrives once, under its parent.
func TestQueueBatchesEncodedAndSDKSpans(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, func(c *telemetry.Config) { c.BatchSize = 3; c.ScheduleWait = time.Hour }, telemetry.Options{})
	ctx, run := telemetry.Start(context.Background(), "odek.job.run") // an SDK span
	for range 7 {
		_, s := telemetry.StartTool(ctx, "shell", "") // encoded at End
		s.End()
	}
	_, mcp := telemetry.StartMCP(ctx, "srv", "tools/list", "")
	mcp.End()
	run.End()
	spans := flush(t, r, p)
	if len(spans) != 9 {
		t.Fatalf("receiver has %d spans, want 9", len(spans))
	}
	root := byName(spans, "odek.job.run")
	ids := map[string]bool{}
	for _, s := range spans {
		ids[hexID(s.GetSpanId())] = true
		if s != root && hexID(s.GetParentSpanId()) != hexID(root.GetSpanId()) {
			t.Errorf("%s not under the run span", s.GetName())
		}
	}
	if len(ids) != 9 {
		t.Errorf("%d distinct span ids, want 9", len(ids))
	}
	if st := p.Stats(); st.Queued != 9 || st.Exported != 9 || st.Dropped != 0 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// The encoded spans of a long run fill many chunks of the queue's buffer:
// every span arrives once, in requests of at most BatchSize spans, and a
// second round, written into the first round's reused chunks, arrives
// whole too (no byte of an exported span left behind in a chunk).
func TestQueueChunksEncodedSpans(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, func(c *telemetry.Config) { c.BatchSize, c.QueueSize, c.ScheduleWait = 40, 1000, time.Hour }, telemetry.Options{})
	ctx, run := telemetry.Start(context.Background(), "odek.run")
	tool := strings.Repeat("t", 120) // ~330 encoded bytes a span: 300 spans are a dozen chunks
	end := func(n int) {
		for i := range n {
			_, s := telemetry.StartTool(ctx, tool, strconv.Itoa(i))
			s.End()
		}
	}
	check := func(want int) {
		t.Helper()
		spans := flush(t, r, p)
		ids := map[string]bool{}
		for _, s := range spans {
			if s.GetName() != "execute_tool "+tool || hexID(s.GetParentSpanId()) != run.SpanContext().SpanID().String() {
				t.Fatalf("span %q under %s, want execute_tool %s under the run", s.GetName(), hexID(s.GetParentSpanId()), tool)
			}
			ids[hexID(s.GetSpanId())] = true
		}
		if len(spans) != want || len(ids) != want {
			t.Fatalf("receiver has %d spans, %d distinct, want %d", len(spans), len(ids), want)
		}
		for _, n := range r.Requests() {
			if n > 40 {
				t.Fatalf("a request carried %d spans, want at most BatchSize 40 (requests %v)", n, r.Requests())
			}
		}
	}
	end(300)
	check(300)
	end(50)
	check(350)
	if st := p.Stats(); st.Queued != 350 || st.Exported != 350 || st.Dropped != 0 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
	run.End()
}

// Stamping an event with the agent span's ids converts them to hex once
// per span, not twice per event: a streamed run writes many events.
func TestEventSpansStampAllocatesNothing(t *testing.T) {
	r := newReceiver(t)
	setup(t, r, nil, telemetry.Options{})
	sink := telemetry.EventSpans(context.Background(), nil)
	start := &events.Event{Type: events.RunStarted, RunID: "r1", Timestamp: time.Now()}
	if err := sink.Write(start); err != nil {
		t.Fatal(err)
	}
	ev := &events.Event{Type: events.ContextTrimmed, RunID: "r1", Timestamp: time.Now()}
	allocs := testing.AllocsPerRun(100, func() {
		ev.TraceID, ev.SpanID = "", ""
		_ = sink.Write(ev)
	})
	if allocs != 0 {
		t.Fatalf("a stamped event allocates %v times, want 0", allocs)
	}
	if ev.TraceID != start.TraceID || ev.SpanID != start.SpanID || len(ev.TraceID) != 32 || len(ev.SpanID) != 16 {
		t.Fatalf("ids %q/%q, want the agent span's %q/%q", ev.TraceID, ev.SpanID, start.TraceID, start.SpanID)
	}
}

// A traced model call and tool call (the loop's two spans an iteration)
// allocate a span and a context each: they are odek's own spans
// (liteSpan), their attributes go in one call per start and end into the
// span's own array, span names and the finish-reason attribute are built
// once. docs/BENCHMARKS.md, tracing on, round 3: 34 allocations with the
// SDK's spans and one SetAttributes per attribute, 13 with the SDK's
// spans and one call per start and end, 4 now.
// iterationAllocs is the allocations of one agent iteration's spans: a
// model call ended with call, then a tool call, under ctx's run span.
func iterationAllocs(ctx context.Context, call telemetry.ChatCall) float64 {
	return testing.AllocsPerRun(200, func() {
		_, chat := telemetry.StartChat(ctx, "m", "")
		chat.EndChat(call, "", nil)
		_, tool := telemetry.StartTool(ctx, "read_file", "c1")
		tool.End()
	})
}

func TestSpansAllocateLittle(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, func(c *telemetry.Config) { c.ScheduleWait, c.QueueSize, c.BatchSize = time.Hour, 1<<12, 1<<12 }, telemetry.Options{})
	ctx, run := telemetry.StartAgent(context.Background(), "r", "s", "m")
	defer run.End()
	call := telemetry.ChatCall{ResponseModel: "m", Input: 100, Output: 20, Cached: 50, TTFT: time.Millisecond,
		Took: 2 * time.Millisecond, Attempts: 1, FinishReason: "tool_calls"}
	if allocs := iterationAllocs(ctx, call); allocs > 6 {
		t.Fatalf("a chat span and a tool span allocate %v times, want at most 6", allocs)
	}
	spans := flush(t, r, p)
	chat := byName(spans, "chat m")
	if chat == nil {
		t.Fatal("no chat span exported")
	}
	for k, want := range map[string]any{telemetry.KeyOperation: "chat", telemetry.KeyRequestModel: "m", telemetry.KeyResponseModel: "m",
		telemetry.KeyInputTokens: int64(100), telemetry.KeyOutputTokens: int64(20), telemetry.KeyCachedTokens: int64(50), telemetry.KeyTTFT: 0.001} {
		if got, _ := attr(chat, k); got != want {
			t.Errorf("chat %s = %v, want %v", k, got, want)
		}
	}
	tool := byName(spans, "execute_tool read_file")
	if v, _ := attr(tool, telemetry.KeyToolCallID); v != "c1" {
		t.Errorf("tool call id = %v", v)
	}
}
