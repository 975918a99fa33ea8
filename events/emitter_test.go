package events

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const testRunID = "0123456789abcdef0123456789abcdef"

// recorder is a Sink that keeps copies of what it is given.
type recorder struct {
	mu  sync.Mutex
	evs []Event
}

func (r *recorder) Write(ev *Event) error {
	r.mu.Lock()
	r.evs = append(r.evs, *ev)
	r.mu.Unlock()
	return nil
}

func (r *recorder) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

func (r *recorder) seqs() []uint64 {
	var out []uint64
	for _, ev := range r.events() {
		out = append(out, ev.Seq)
	}
	return out
}

func finalCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNewRunID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewRunID()
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("run id %q is not 32 lower-case hex digits", id)
		}
		if seen[id] {
			t.Fatalf("run id %q repeated", id)
		}
		seen[id] = true
	}
}

func TestEmitStampsEvents(t *testing.T) {
	rec := &recorder{}
	loc := time.FixedZone("UTC+2", 2*3600)
	now := time.Date(2026, 8, 7, 14, 0, 0, 500, loc)
	e := NewEmitter(testRunID, rec, Options{Clock: func() time.Time { return now }})
	e.Emit(RunStarted, 0, "", map[string]any{"model": "m"})
	e.SetSessionID("sess-1")
	e.Emit(ToolCallStarted, 3, "shell", nil)
	if err := e.Final(finalCtx(t), RunCompleted, nil); err != nil {
		t.Fatal(err)
	}
	evs := rec.events()
	if len(evs) != 3 {
		t.Fatalf("got %d events, want 3", len(evs))
	}
	for i, ev := range evs {
		if ev.Schema != Schema || ev.RunID != testRunID || ev.Seq != uint64(i+1) {
			t.Errorf("event %d: schema %q run %q seq %d", i, ev.Schema, ev.RunID, ev.Seq)
		}
		if ev.Timestamp.Location() != time.UTC || !ev.Timestamp.Equal(now) {
			t.Errorf("event %d: timestamp %v, want %v in UTC", i, ev.Timestamp, now)
		}
	}
	if evs[0].SessionID != "" || evs[1].SessionID != "sess-1" || evs[2].SessionID != "sess-1" {
		t.Errorf("session ids %q %q %q, want '' then sess-1", evs[0].SessionID, evs[1].SessionID, evs[2].SessionID)
	}
	if evs[1].Iteration != 3 || evs[1].Tool != "shell" || evs[1].Data != nil {
		t.Errorf("tool event %+v", evs[1])
	}
	if got := e.RunID(); got != testRunID {
		t.Errorf("RunID() = %q", got)
	}
}

type opaque struct {
	Path  string `json:"path"`
	Count int    `json:"count"`
}

func TestEmitRedactsEveryString(t *testing.T) {
	redact := func(s string) string { return strings.ReplaceAll(s, "hunter2", "[REDACTED]") }
	self := map[string]any{"s": "hunter2"}
	self["self"] = self
	deep := map[string]any{}
	cur := deep
	for range 40 {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	cur["s"] = "hunter2"
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"string", "pw=hunter2", "pw=[REDACTED]"},
		{"number", 42, 42},
		{"bool", true, true},
		{"nil", nil, nil},
		{"NaN becomes null", math.NaN(), nil},
		{"infinity becomes null", math.Inf(1), nil},
		{"string slice", []string{"a", "hunter2"}, []string{"a", "[REDACTED]"}},
		{"string map", map[string]string{"hunter2": "hunter2"}, map[string]string{"[REDACTED]": "[REDACTED]"}},
		{"nested", map[string]any{"a": []any{"hunter2", 1, map[string]any{"b": "hunter2"}}},
			map[string]any{"a": []any{"[REDACTED]", 1, map[string]any{"b": "[REDACTED]"}}}},
		{"empty map stays a map", map[string]any{}, map[string]any{}},
		{"error", errors.New("token hunter2 rejected"), "token [REDACTED] rejected"},
		{"raw JSON", json.RawMessage(`{"pw":"hunter2","n":1}`), map[string]any{"pw": "[REDACTED]", "n": json.Number("1")}},
		{"raw non-JSON", json.RawMessage(`hunter2`), "[REDACTED]"},
		{"struct via JSON", opaque{Path: "/x/hunter2", Count: 2}, map[string]any{"path": "/x/[REDACTED]", "count": json.Number("2")}},
		{"unencodable", make(chan int), "[odek: unencodable type]"},
		{"duration", 2 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redactValue(tt.in, redact, 1)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	t.Run("too deep", func(t *testing.T) {
		got := redactValue(deep, redact, 1)
		b, _ := json.Marshal(got)
		if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), deepValue) {
			t.Errorf("deep value: %s", b)
		}
		got = redactValue(self, redact, 1)
		if b, err := json.Marshal(got); err != nil || !strings.Contains(string(b), deepValue) {
			t.Errorf("self-referencing value: %s, %v", b, err)
		}
	})
	t.Run("through Emit", func(t *testing.T) {
		rec := &recorder{}
		e := NewEmitter(testRunID, rec, Options{Redact: redact})
		data := map[string]any{"args_summary": map[string]any{"argv0": "hunter2"}, "hunter2": 1}
		e.Emit(ToolCallStarted, 1, "tool-hunter2", data)
		if err := e.Close(finalCtx(t)); err != nil {
			t.Fatal(err)
		}
		ev := rec.events()[0]
		if ev.Tool != "tool-[REDACTED]" {
			t.Errorf("tool %q not redacted", ev.Tool)
		}
		want := map[string]any{"args_summary": map[string]any{"argv0": "[REDACTED]"}, "[REDACTED]": 1}
		if !reflect.DeepEqual(ev.Data, want) {
			t.Errorf("data %#v, want %#v", ev.Data, want)
		}
		if data["args_summary"].(map[string]any)["argv0"] != "hunter2" {
			t.Error("Emit modified the caller's data")
		}
	})
}

// gate is a Sink that blocks on the event with seq block until released.
type gate struct {
	recorder
	block   uint64
	reached chan struct{}
	release chan struct{}
}

func newGate(block uint64) *gate {
	return &gate{block: block, reached: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Write(ev *Event) error {
	if ev.Seq == g.block {
		close(g.reached)
		<-g.release
	}
	return g.recorder.Write(ev)
}

func TestSeqCountsDroppedEvents(t *testing.T) {
	g := newGate(1)
	e := NewEmitter(testRunID, g, Options{Buffer: 2})
	e.Emit(RunStarted, 0, "", nil) // seq 1: taken by the drain, which blocks
	<-g.reached
	e.Emit(IterationCompleted, 1, "", nil) // seq 2: buffered
	e.Emit(IterationCompleted, 2, "", nil) // seq 3: buffered
	e.Emit(IterationCompleted, 3, "", nil) // seq 4: dropped
	e.Emit(IterationCompleted, 4, "", nil) // seq 5: dropped
	if got := e.Dropped(); got != 2 {
		t.Errorf("Dropped() = %d before release, want 2", got)
	}
	close(g.release)
	if err := e.Final(finalCtx(t), RunCompleted, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := g.seqs(), []uint64{1, 2, 3, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("written seqs %v, want %v", got, want)
	}
	want := Stats{Emitted: 6, Written: 4, Dropped: 2}
	if got := e.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestFinalWaitsForEverythingBefore(t *testing.T) {
	rec := &recorder{}
	e := NewEmitter(testRunID, rec, Options{Buffer: 500})
	for i := range 300 {
		e.Emit(IterationCompleted, i+1, "", nil)
	}
	if err := e.Final(finalCtx(t), RunFailed, map[string]any{"error_class": "error"}); err != nil {
		t.Fatal(err)
	}
	evs := rec.events()
	if len(evs) != 301 {
		t.Fatalf("Final returned with %d of 301 events written", len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if last := evs[300]; last.Type != RunFailed {
		t.Errorf("last event %s, want run_failed", last.Type)
	}
	// The emitter is closed now.
	e.Emit(IterationCompleted, 9, "", nil)
	if err := e.Final(finalCtx(t), RunCompleted, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("second Final: %v, want ErrClosed", err)
	}
	if got := e.Dropped(); got != 2 {
		t.Errorf("Dropped() = %d after closing, want 2", got)
	}
	if len(rec.events()) != 301 {
		t.Error("events written after Final")
	}
}

func TestFinalIsNeverDroppedWhenBufferFull(t *testing.T) {
	g := newGate(1)
	e := NewEmitter(testRunID, g, Options{Buffer: 1})
	e.Emit(RunStarted, 0, "", nil)
	<-g.reached
	e.Emit(IterationCompleted, 1, "", nil) // fills the buffer
	done := make(chan error)
	go func() { done <- e.Final(context.Background(), RunCompleted, nil) }()
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := g.seqs(), []uint64{1, 2, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
}

func TestFinalHonoursContext(t *testing.T) {
	g := newGate(1)
	e := NewEmitter(testRunID, g, Options{})
	e.Emit(RunStarted, 0, "", nil)
	<-g.reached
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Final(ctx, RunCompleted, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Final with a stuck sink: %v, want context.Canceled", err)
	}
	close(g.release)
	if err := e.Close(finalCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got, want := g.seqs(), []uint64{1, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("written %v, want the final event after the sink recovered: %v", got, want)
	}
}

func TestSinkPanicIsRecovered(t *testing.T) {
	for _, value := range []any{"boom", errors.New("boom error")} {
		var mu sync.Mutex
		var reported []error
		rec := &recorder{}
		sink := SinkFunc(func(ev *Event) error {
			if ev.Seq == 2 {
				panic(value)
			}
			return rec.Write(ev)
		})
		e := NewEmitter(testRunID, sink, Options{OnError: func(err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		}})
		for i := range 3 {
			e.Emit(IterationCompleted, i+1, "", nil)
		}
		if err := e.Final(finalCtx(t), RunCompleted, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := rec.seqs(), []uint64{1, 3, 4}; !reflect.DeepEqual(got, want) {
			t.Errorf("written %v, want %v", got, want)
		}
		var serr *SinkError
		if len(reported) != 1 || !errors.As(reported[0], &serr) || !errors.Is(serr, ErrSinkPanic) || serr.Seq != 2 {
			t.Fatalf("reported %v, want one *SinkError for seq 2 wrapping ErrSinkPanic", reported)
		}
		if !strings.Contains(serr.Error(), "boom") {
			t.Errorf("panic value missing from %q", serr)
		}
		if st := e.Stats(); st.SinkErrors != 1 || st.Written != 3 {
			t.Errorf("Stats() = %+v", st)
		}
	}
}

func TestSinkErrorsAreRateLimited(t *testing.T) {
	boom := errors.New("disk full")
	var calls []uint64
	e := NewEmitter(testRunID, SinkFunc(func(*Event) error { return boom }), Options{
		OnError: func(err error) {
			var serr *SinkError
			if errors.As(err, &serr) {
				calls = append(calls, serr.Failures)
			}
			panic("OnError panics too") // must not stop the emitter
		},
	})
	for i := range 20 {
		e.Emit(IterationCompleted, i+1, "", nil)
	}
	err := e.Final(finalCtx(t), RunCompleted, nil)
	var serr *SinkError
	if !errors.As(err, &serr) || !errors.Is(err, boom) || serr.Seq != 21 || serr.Failures != 21 {
		t.Fatalf("Final: %v, want *SinkError for seq 21 wrapping the sink's error", err)
	}
	if want := []uint64{1, 2, 4, 8, 16}; !reflect.DeepEqual(calls, want) {
		t.Errorf("OnError saw failures %v, want %v", calls, want)
	}
}

func TestRedactPanicDropsEvent(t *testing.T) {
	var reported []error
	rec := &recorder{}
	e := NewEmitter(testRunID, rec, Options{
		Redact:  func(s string) string { panic("bad redactor") },
		OnError: func(err error) { reported = append(reported, err) },
	})
	e.Emit(ToolCallStarted, 1, "shell", map[string]any{"call_id": "c1"})
	if err := e.Final(finalCtx(t), RunFailed, map[string]any{"error_class": "error"}); err != nil {
		t.Fatal(err)
	}
	evs := rec.events()
	if len(evs) != 1 || evs[0].Type != RunFailed || evs[0].Seq != 2 || evs[0].Data != nil {
		t.Fatalf("written %+v, want only the final event, seq 2, without data", evs)
	}
	if len(reported) != 2 || !errors.Is(reported[0], ErrSinkPanic) {
		t.Errorf("reported %v", reported)
	}
	if e.Dropped() != 1 {
		t.Errorf("Dropped() = %d, want 1", e.Dropped())
	}
}

func TestNilEmitter(t *testing.T) {
	var e *Emitter
	e.Emit(RunStarted, 0, "", nil)
	e.SetSessionID("s")
	if e.RunID() != "" || e.Dropped() != 0 || e.Stats() != (Stats{}) {
		t.Error("nil emitter reports state")
	}
	if err := e.Final(context.Background(), RunCompleted, nil); err != nil {
		t.Error(err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestNilSinkCountsEvents(t *testing.T) {
	e := NewEmitter(testRunID, nil, Options{})
	e.Emit(RunStarted, 0, "", nil)
	if err := e.Final(finalCtx(t), RunCompleted, nil); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st != (Stats{Emitted: 2, Written: 2}) {
		t.Errorf("Stats() = %+v", st)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	rec := &recorder{}
	e := NewEmitter(testRunID, rec, Options{})
	e.Emit(RunStarted, 0, "", nil)
	for range 2 {
		if err := e.Close(finalCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	e.Emit(IterationCompleted, 1, "", nil)
	if got := rec.seqs(); !reflect.DeepEqual(got, []uint64{1}) {
		t.Errorf("written %v", got)
	}
	if e.Dropped() != 1 {
		t.Errorf("Emit after Close not counted: Dropped() = %d", e.Dropped())
	}
}

func TestConcurrentEmitKeepsSeqOrder(t *testing.T) {
	rec := &recorder{}
	e := NewEmitter(testRunID, rec, Options{Buffer: 8})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				e.Emit(ToolCallStarted, g+1, "t", map[string]any{"i": i})
				if i%50 == 0 {
					e.SetSessionID("s")
				}
			}
		}()
	}
	wg.Wait()
	if err := e.Final(finalCtx(t), RunCompleted, nil); err != nil {
		t.Fatal(err)
	}
	seqs := rec.seqs()
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("sink saw seq %d after %d", seqs[i], seqs[i-1])
		}
	}
	st := e.Stats()
	if st.Emitted != 1601 || st.Written+st.Dropped != st.Emitted || seqs[len(seqs)-1] != 1601 {
		t.Errorf("Stats() = %+v, last seq %d", st, seqs[len(seqs)-1])
	}
}

func TestMulti(t *testing.T) {
	a, c := &recorder{}, &recorder{}
	boom := errors.New("boom")
	failing := SinkFunc(func(*Event) error { return boom })
	panicking := SinkFunc(func(*Event) error { panic("oops") })
	m := Multi(a, nil, failing, panicking, c)
	err := m.Write(&Event{Seq: 7})
	if !errors.Is(err, boom) || !errors.Is(err, ErrSinkPanic) {
		t.Errorf("Multi error %v, want both failures", err)
	}
	if len(a.events()) != 1 || len(c.events()) != 1 {
		t.Error("a failing sink kept the event from the others")
	}
	if err := Multi().Write(&Event{}); err != nil {
		t.Errorf("empty Multi: %v", err)
	}
}
