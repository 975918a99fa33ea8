package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// recordingTool counts its runs.
type recordingTool struct{ runs atomic.Int32 }

func (r *recordingTool) Definition() Definition { return Definition{Name: "other"} }
func (r *recordingTool) Assess(json.RawMessage) (Assessment, error) {
	return Assessment{Class: ClassLocalWrite}, nil
}
func (r *recordingTool) Run(context.Context, json.RawMessage) (Result, error) {
	r.runs.Add(1)
	return Result{Text: "ran"}, nil
}

// A tool that is not a built-in (a sub-agent, an MCP tool) does not run
// while a line that runs git holds the gate: its call waits, and ends with
// its context if git does not finish first.
func TestGateOthersWaitForGit(t *testing.T) {
	builtins := Builtins(Options{WorkDir: t.TempDir()})
	other := &recordingTool{}
	gated := GateOthers(builtins, []Tool{other})
	if len(gated) != 1 || gated[0].Definition().Name != "other" {
		t.Fatalf("GateOthers returned %v", gated)
	}
	var gate *gitGate
	for _, b := range builtins {
		if s, ok := b.(*shellTool); ok {
			gate = &s.c.gate
		}
	}
	release, err := gate.lock(context.Background(), true) // a line running git
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := gated[0].Run(ctx, json.RawMessage(`{}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a gated call during git: %v, want it held until its context ended", err)
	}
	if n := other.runs.Load(); n != 0 {
		t.Fatalf("the other tool ran %d times while git held the gate", n)
	}
	release()
	if res, err := gated[0].Run(context.Background(), json.RawMessage(`{}`)); err != nil || res.Text != "ran" {
		t.Fatalf("after git: %+v %v", res, err)
	}
	if g := GateOthers(nil, []Tool{other}); g[0] != Tool(other) {
		t.Error("without built-ins the tools were wrapped")
	}
}
