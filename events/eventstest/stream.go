package eventstest

import (
	"fmt"

	"github.com/odekrun/odek/events"
)

// streamState checks the rules that span events.
type streamState struct {
	opts      Options
	n         int // events seen
	runID     string
	lastSeq   uint64
	gap       bool
	sessionID string
	terminal  int // line of the terminal event, 0 before it
	budget    int // line of the first budget_exceeded, 0 if none
	calls     map[string]*call
	callOrder []string
}

type call struct {
	tool    string
	started int // line of tool_call_started
	ended   int // line of tool_call_completed or tool_call_failed
}

func newStreamState(opts Options) *streamState {
	return &streamState{opts: opts, calls: make(map[string]*call)}
}

func (st *streamState) add(line int, ev events.Event) (errs []error) {
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{Line: line, Seq: ev.Seq, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	st.n++
	if st.n == 1 {
		st.runID = ev.RunID
		st.lastSeq = ev.Seq
		if ev.Seq != 1 && !st.opts.AllowGaps {
			bad("seq", "the first event must have seq 1")
		}
	} else if ev.RunID != st.runID {
		bad("run_id", "%q differs from the stream's run id %q", ev.RunID, st.runID)
	}
	if ev.Seq > 0 && st.n > 1 {
		switch {
		case ev.Seq <= st.lastSeq:
			bad("seq", "not increasing: follows seq %d", st.lastSeq)
		case ev.Seq != st.lastSeq+1 && !st.opts.AllowGaps:
			bad("seq", "gap after seq %d (dropped events; Options.AllowGaps accepts them)", st.lastSeq)
		case ev.Seq != st.lastSeq+1:
			st.gap = true
		}
		st.lastSeq = max(st.lastSeq, ev.Seq)
	}
	switch {
	case st.sessionID != "" && ev.SessionID == "":
		bad("session_id", "missing after earlier events carried %q", st.sessionID)
	case st.sessionID != "" && ev.SessionID != st.sessionID:
		bad("session_id", "%q differs from the earlier %q", ev.SessionID, st.sessionID)
	case st.sessionID == "":
		st.sessionID = ev.SessionID
	}
	if st.terminal > 0 {
		bad("type", "%s after the final event on line %d", ev.Type, st.terminal)
	}
	// Every tool_call_* payload carries call_id.
	var ids events.ToolCallFailedData
	ids.Decode(ev.Data)
	switch callID := ids.CallID; {
	case isTerminal(ev.Type):
		if st.terminal == 0 {
			st.terminal = line
		}
		if ev.Type == events.RunCompleted && st.budget > 0 {
			bad("type", "run_completed after budget_exceeded on line %d; a budget stop ends with run_failed", st.budget)
		}
	case ev.Type == events.BudgetExceeded:
		if st.budget == 0 {
			st.budget = line
		}
	case ev.Type == events.ToolCallStarted && callID != "":
		if c, dup := st.calls[callID]; dup {
			bad("data.call_id", "%q already started on line %d", callID, c.started)
			break
		}
		st.calls[callID] = &call{tool: ev.Tool, started: line}
		st.callOrder = append(st.callOrder, callID)
	case (ev.Type == events.ToolCallCompleted || ev.Type == events.ToolCallFailed) && callID != "":
		c := st.calls[callID]
		switch {
		case c == nil && st.gap:
			// Its start may have been dropped.
		case c == nil:
			bad("data.call_id", "%s for %q, which never started", ev.Type, callID)
		case c.ended > 0:
			bad("data.call_id", "%q already ended on line %d", callID, c.ended)
		default:
			c.ended = line
			if ev.Tool != c.tool {
				bad("tool", "%q differs from %q of tool_call_started on line %d", ev.Tool, c.tool, c.started)
			}
		}
	}
	return errs
}

func (st *streamState) finish() (errs []error) {
	if st.n == 0 {
		return []error{&Error{Reason: "empty stream: no events"}}
	}
	if st.terminal == 0 {
		errs = append(errs, &Error{Field: "type", Reason: "no final run_completed or run_failed event"})
	}
	if st.gap {
		return errs // ends may have been dropped
	}
	for _, id := range st.callOrder {
		if c := st.calls[id]; c.ended == 0 {
			errs = append(errs, &Error{Line: c.started, Field: "data.call_id",
				Reason: fmt.Sprintf("tool call %q never completed or failed", id)})
		}
	}
	return errs
}
