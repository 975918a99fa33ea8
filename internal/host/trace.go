package host

import (
	"context"
	"encoding/json"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/telemetry"
)

// Tracing a run in place (issue 24, docs/OBSERVABILITY.md). Prepare opens
// the run's "invoke_agent odek" span and hands the run's events, if its
// front end writes them anywhere, to telemetry.RunSink; RunAgent puts the
// run's outcome on the span; Build wraps the model and every tool so that each
// model call and each tool call is a span of its own, started where the
// call happens: the tool's span is in the context the tool runs with, so
// a shell command's TRACEPARENT, an MCP request's _meta and headers and a
// sub-agent's environment carry it. The events a traced run emits arrive
// stamped, and telemetry.EventSpans then leaves them alone: no span is
// rebuilt a second time. While tracing is off nothing is wrapped.

// traceModel wraps m so each call is a "chat <model>" span; m's streaming
// is kept (the loop asks for agent.StreamingModel).
func traceModel(m agent.Model, model string) agent.Model {
	if m == nil || !telemetry.On() {
		return m
	}
	tm := tracedModel{m: m, model: model}
	if sm, ok := m.(agent.StreamingModel); ok {
		return tracedStreamingModel{tracedModel: tm, sm: sm}
	}
	return tm
}

type tracedModel struct {
	m     agent.Model
	model string
}

func (t tracedModel) Complete(ctx context.Context, req agent.Request) (*agent.Response, error) {
	ctx, s := t.start(ctx, req)
	res, err := t.m.Complete(ctx, req)
	endChat(s, res, err)
	return res, err
}

func (t tracedModel) start(ctx context.Context, req agent.Request) (context.Context, telemetry.Span) {
	model := req.Model
	if model == "" {
		model = t.model
	}
	ctx, s := telemetry.StartChat(ctx, model, "")
	if s.Capturing() { // opt-in: the request's messages, masked and clipped by Content
		if b, err := json.Marshal(req.Messages); err == nil {
			s.Content(telemetry.KeyInputMessages, string(b))
		}
	}
	return ctx, s
}

type tracedStreamingModel struct {
	tracedModel
	sm agent.StreamingModel
}

func (t tracedStreamingModel) CompleteStream(ctx context.Context, req agent.Request, delta func(agent.Delta)) (*agent.Response, error) {
	ctx, s := t.start(ctx, req)
	res, err := t.sm.CompleteStream(ctx, req, delta)
	endChat(s, res, err)
	return res, err
}

func endChat(s telemetry.Span, res *agent.Response, err error) {
	var c telemetry.ChatCall
	if res != nil {
		c = telemetry.ChatCall{ResponseModel: res.Model, Input: res.Usage.PromptTokens, Output: res.Usage.CompletionTokens,
			Cached: res.Usage.CachedTokens, TTFT: res.Timing.TTFT, Took: res.Timing.Duration, Attempts: res.Timing.Attempts,
			FinishReason: res.FinishReason}
	}
	class := ""
	if err != nil {
		class = agent.ErrorClass(err)
	}
	if res != nil && s.Capturing() {
		if b, err := json.Marshal([]agent.Message{res.Message}); err == nil {
			s.Content(telemetry.KeyOutputMessages, string(b))
		}
	}
	s.EndChat(c, class, err)
}

// traceTools wraps each tool so its Run is an "execute_tool <name>" span.
func traceTools(ts []agent.Tool) []agent.Tool {
	if !telemetry.On() {
		return ts
	}
	out := make([]agent.Tool, len(ts))
	for i, t := range ts {
		out[i] = tracedTool{Tool: t, name: t.Definition().Name}
	}
	return out
}

// tracedTool keeps the tool's name: a Definition is built per call (the
// builtins marshal their JSON Schema in it), which the span needs only
// the name of.
type tracedTool struct {
	agent.Tool
	name string
}

func (t tracedTool) Run(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	call, _ := agent.CallFrom(ctx)
	ctx, s := telemetry.StartTool(ctx, t.name, call.CallID)
	if s.Capturing() {
		s.Content(telemetry.KeyToolArguments, string(args))
	}
	res, err := t.Tool.Run(ctx, args)
	switch {
	case err != nil:
		s.Fail(agent.ErrorClass(err), err)
	case res.IsError:
		s.Fail("tool_error", nil)
	default:
		s.Content(telemetry.KeyToolResult, res.Text)
	}
	s.End()
	return res, err
}

// startAgentSpan opens the run's span for Prepare and returns the context
// the run goes on with; the zero Span while tracing is off.
func startAgentSpan(ctx context.Context, runID, sessionID, model string) (context.Context, telemetry.Span) {
	return telemetry.StartAgent(ctx, runID, sessionID, model)
}

// runDone puts the run's outcome on its span (telemetry.Span.RunDone):
// the token totals, or the failure's class.
func (r *Runtime) runDone(acfg agent.Config, res *agent.Result, err error) {
	if !r.span.Recording() || res == nil {
		return
	}
	class, conv := "", ""
	if err != nil {
		class = agent.ErrorClass(err)
	}
	if acfg.SessionID != r.Agent.SessionID { // set by the caller after Prepare
		conv = acfg.SessionID
	}
	r.span.RunDone(res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.CachedTokens, conv, class)
}

// Context returns ctx carrying the run's span, the context agent.Run must
// be given so that the model and tool spans are the run span's children
// (Host.Run does it; a front end that drives agent.Run itself after
// Prepare calls it). Off, ctx comes back as is.
func (r *Runtime) Context(ctx context.Context) context.Context {
	if r == nil {
		return ctx
	}
	return telemetry.ContextWithSpan(ctx, r.span)
}
