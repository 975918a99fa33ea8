package worker

import (
	"encoding/json"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/queue"
)

// The first text of a model call is published at once: the flush at the
// call's start, with nothing pending, does not start a coalescing wait
// (it held every first draft back by deltaEvery, issue 26). Later text
// within deltaEvery waits to be coalesced.
func TestFirstDeltaOfACallIsNotHeldBack(t *testing.T) {
	p := &publisher{ch: make(chan pubItem, 16)}
	d := newDeltaSink(&jobSink{p: p, sum: queue.ProgressSummary{JobID: "j1"}})
	defer d.stop()
	d.signal(agent.SignalEvent{Type: agent.SignalAnswerStart})
	d.signal(agent.SignalEvent{Type: agent.SignalAnswerDelta, Text: "Hello"})
	select {
	case it := <-p.ch:
		var got queue.AnswerDelta
		if err := json.Unmarshal(it.entry.Data, &got); err != nil || got.Text != "Hello" || got.Call != 1 || got.Offset != 0 {
			t.Fatalf("published %s (%v)", it.entry.Data, err)
		}
	default:
		t.Fatal("the call's first text was not published at once")
	}
	d.signal(agent.SignalEvent{Type: agent.SignalAnswerDelta, Text: " world"})
	select {
	case it := <-p.ch:
		t.Fatalf("the second piece was published at once, not coalesced: %s", it.entry.Data)
	default:
	}
}
