package telemetry

import (
	"context"
	"time"

	"github.com/odekrun/odek/events"
	"go.opentelemetry.io/otel/trace"
)

// EventSpans returns the sink a run's Emitter should write to so that the
// run shows in the trace without an edit inside agent: it forwards every
// event to next after stamping it with the ids of the span it belongs to
// (Event.TraceID, Event.SpanID), and rebuilds spans from the events, at
// the events' own timestamps:
//
//   - run_started … run_completed/run_failed: "invoke_agent odek", child of
//     ctx's span, with gen_ai.conversation.id (the session), the model and
//     the run's token totals (cached ones included);
//   - iteration_completed: "chat <model>", the iteration's model call: it
//     ends where the iteration's first tool call starts (or at the event
//     when the model called none) and lasts call_duration_ms, with
//     time to first token and the call's tokens;
//   - tool_call_started … tool_call_completed/failed: "execute_tool <tool>".
//
// It is the fallback for runs that are not traced in place: an event
// that arrives already stamped (RunSink, a run internal/host assembled,
// whose model and tool spans exist) passes through untouched, so no call
// is counted twice.
//
// Events are written from the Emitter's one goroutine, so the rebuilt
// spans never slow the loop. Off (and with no trace in ctx) it returns
// next itself; off with a trace handed in (TRACEPARENT, a job's trace
// field) it only stamps that trace's ids. A nil next is allowed: the
// events then only make spans.
func EventSpans(ctx context.Context, next events.Sink) events.Sink {
	p := active.Load()
	tid, sid := IDs(ctx)
	if p == nil {
		if tid == "" || next == nil {
			return next
		}
		return events.SinkFunc(func(ev *events.Event) error {
			if ev.TraceID == "" {
				ev.TraceID, ev.SpanID = tid, sid
			}
			return next.Write(ev)
		})
	}
	return &eventSpans{next: next, p: p, parent: ctx, tid: tid, sid: sid,
		tools: map[string]Span{}, modelEnd: map[int]time.Time{}}
}

type eventSpans struct {
	next     events.Sink
	p        *Provider
	parent   context.Context
	tid, sid string // the parent's ids, for events before run_started

	agentCtx context.Context
	agent    Span
	model    string
	conv     bool
	tools    map[string]Span   // open tool spans by call id
	modelEnd map[int]time.Time // iteration → start of its first tool call

	// The hex form of the ids last stamped: most events (every streamed
	// delta, every iteration's start) belong to the agent span, and the
	// trace id never changes within a run, so stamping converts each id
	// once instead of allocating two strings per event.
	lastTID        trace.TraceID
	lastSID        trace.SpanID
	lastTS, lastSS string
}

func (e *eventSpans) Write(ev *events.Event) error {
	// An event already stamped comes from a run traced in place (RunSink):
	// its spans exist, rebuilding them would count the run twice.
	if ev.TraceID == "" {
		e.observe(ev)
	}
	if e.next == nil {
		return nil
	}
	return e.next.Write(ev)
}

func (e *eventSpans) stamp(ev *events.Event, s Span) {
	if sc := s.SpanContext(); sc.IsValid() {
		if tid := sc.TraceID(); tid != e.lastTID || e.lastTS == "" {
			e.lastTID, e.lastTS = tid, tid.String()
		}
		if sid := sc.SpanID(); sid != e.lastSID || e.lastSS == "" {
			e.lastSID, e.lastSS = sid, sid.String()
		}
		ev.TraceID, ev.SpanID = e.lastTS, e.lastSS
		return
	}
	ev.TraceID, ev.SpanID = e.tid, e.sid
}

func (e *eventSpans) observe(ev *events.Event) {
	if e.agent.s == nil && ev.Type != events.RunStarted {
		e.start(ev, "") // events before run_started (a compaction, a plan)
	}
	switch ev.Type {
	case events.RunStarted:
		var d events.RunStartedData
		d.Decode(ev.Data)
		if e.agent.s == nil {
			e.start(ev, d.Model)
		} else if d.Model != "" {
			e.model = d.Model
			e.agent.String(KeyRequestModel, d.Model)
		}
	case events.ToolCallStarted:
		var d events.ToolCallStartedData
		d.Decode(ev.Data)
		if _, ok := e.modelEnd[ev.Iteration]; !ok {
			e.modelEnd[ev.Iteration] = ev.Timestamp
		}
		_, s := e.p.startTool(e.agentCtx, ev.Tool, d.CallID, ev.Timestamp)
		s.Int(KeyIteration, int64(ev.Iteration))
		if d.Args != "" {
			s.Content(KeyToolArguments, d.Args)
		}
		if old, ok := e.tools[d.CallID]; ok { // a repeated id: close the old one
			old.EndAt(ev.Timestamp)
		}
		e.tools[d.CallID] = s
		e.stamp(ev, s)
		return
	case events.ToolCallCompleted, events.ToolCallFailed:
		id, _ := ev.Data["call_id"].(string)
		s, ok := e.tools[id]
		if ok {
			delete(e.tools, id)
			if ev.Type == events.ToolCallFailed {
				var d events.ToolCallFailedData
				d.Decode(ev.Data)
				s.Fail(d.ErrorClass, nil)
			}
			e.stamp(ev, s)
			s.EndAt(ev.Timestamp)
			return
		}
	case events.IterationCompleted:
		var d events.IterationCompletedData
		d.Decode(ev.Data)
		end, ok := e.modelEnd[ev.Iteration]
		if !ok {
			end = ev.Timestamp
		}
		delete(e.modelEnd, ev.Iteration)
		_, s := e.p.startChat(e.agentCtx, e.model, "", end.Add(-d.CallDuration))
		s.Int(KeyIteration, int64(ev.Iteration))
		s.Usage(d.CallInputTokens, d.CallOutputTokens, 0)
		if d.TTFT > 0 {
			s.Float(KeyTTFT, d.TTFT.Seconds())
			s.Event("gen_ai.first_chunk", end.Add(-d.CallDuration+d.TTFT))
		}
		s.EndAt(end)
	case events.RunCompleted, events.RunFailed:
		if ev.SessionID != "" && !e.conv {
			e.agent.String(KeyConversationID, ev.SessionID)
			e.conv = true
		}
		for id, s := range e.tools { // calls that never reported back
			s.Fail("unfinished", nil)
			s.EndAt(ev.Timestamp)
			delete(e.tools, id)
		}
		if ev.Type == events.RunCompleted {
			var d events.RunCompletedData
			d.Decode(ev.Data)
			e.agent.Usage(d.InputTokens, d.OutputTokens, d.CachedInputTokens)
		} else {
			var d events.RunFailedData
			d.Decode(ev.Data)
			e.agent.Fail(d.ErrorClass, nil)
		}
		e.stamp(ev, e.agent)
		e.agent.EndAt(ev.Timestamp)
		return
	}
	if ev.SessionID != "" && !e.conv {
		e.agent.String(KeyConversationID, ev.SessionID)
		e.conv = true
	}
	e.stamp(ev, e.agent)
}

func (e *eventSpans) start(ev *events.Event, model string) {
	e.model = model
	e.agentCtx, e.agent = e.p.startAgent(e.parent, ev.RunID, ev.SessionID, model, ev.Timestamp)
	e.conv = ev.SessionID != ""
}
