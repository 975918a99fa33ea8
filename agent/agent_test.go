package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/events/eventstest"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/tools"
)

// fakeTool is a test tool with a fixed class and a scripted Run.
type fakeTool struct {
	name  string
	class tools.Class
	run   func(ctx context.Context, args json.RawMessage) (tools.Result, error)
}

func (f *fakeTool) Definition() tools.Definition {
	return tools.Definition{Name: f.name, Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (f *fakeTool) Assess(json.RawMessage) (tools.Assessment, error) {
	return tools.Assessment{Class: f.class, Summary: map[string]any{"path": "x"}}, nil
}
func (f *fakeTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	return f.run(ctx, args)
}

func echoTool() *fakeTool {
	return &fakeTool{name: "echo", class: tools.ClassSafe, run: func(_ context.Context, a json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "echo:" + string(a)}, nil
	}}
}

// jsonlSink keeps the JSONL encoding of every event, as the file sink would.
type jsonlSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *jsonlSink) Write(ev *events.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	s.buf.Write(b)
	s.buf.WriteByte('\n')
	return nil
}

func (s *jsonlSink) validate(t *testing.T, opts eventstest.Options) []events.Event {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	evs, err := eventstest.ValidateStream(bytes.NewReader(s.buf.Bytes()), opts)
	if err != nil {
		t.Fatalf("event stream invalid: %v\n%s", err, s.buf.String())
	}
	return evs
}

func types(evs []events.Event) string {
	var b []string
	for _, e := range evs {
		b = append(b, string(e.Type))
	}
	return strings.Join(b, ",")
}

func newClient(t *testing.T, url string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: url, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMultiStepRun(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "echo", Arguments: `{"msg":"hello"}`}),
		llmtest.CallTools(llmtest.Call{ID: "c2", Name: "echo", Arguments: `{"msg":"again"}`}),
		llmtest.Reply("done: hello again"),
	)
	sink := &jsonlSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{echoTool()}, EventSink: sink,
	}, "say hello")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done: hello again" || res.Iterations != 3 || res.ToolCalls != 2 {
		t.Fatalf("result = %+v", res)
	}
	if len(res.RunID) != 32 {
		t.Fatalf("run id %q", res.RunID)
	}
	reqs := srv.Requests()
	last := reqs[2].Messages
	if got := last[len(last)-1]; got.Role != llm.RoleTool || got.ToolCallID != "c2" || got.Content != `echo:{"msg":"again"}` {
		t.Fatalf("last tool message = %+v", got)
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Function.Name != "echo" {
		t.Fatalf("tools sent = %+v", reqs[0].Tools)
	}
	evs := sink.validate(t, eventstest.Options{})
	want := "run_started,tool_call_started,tool_call_completed,iteration_completed,tool_call_started,tool_call_completed,iteration_completed,iteration_completed,run_completed"
	if got := types(evs); got != want {
		t.Fatalf("event types\n got %s\nwant %s", got, want)
	}
	for _, e := range evs {
		if _, ok := e.Data["args"]; ok {
			t.Fatalf("raw args leaked without opt-in: %+v", e)
		}
	}
}

func TestParallelCallsRunConcurrentlyAndKeepOrder(t *testing.T) {
	const n = 3
	var started sync.WaitGroup
	started.Add(n)
	barrier := &fakeTool{name: "wait", class: tools.ClassSafe, run: func(ctx context.Context, a json.RawMessage) (tools.Result, error) {
		started.Done()
		done := make(chan struct{})
		go func() { started.Wait(); close(done) }()
		select {
		case <-done: // all n calls are running at once
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		case <-time.After(10 * time.Second):
			return tools.Result{Text: "calls did not overlap", IsError: true}, nil
		}
		return tools.Result{Text: string(a)}, nil
	}}
	srv := llmtest.New(t,
		llmtest.CallTools(
			llmtest.Call{ID: "a", Name: "wait", Arguments: `{"n":0}`},
			llmtest.Call{ID: "b", Name: "wait", Arguments: `{"n":1}`},
			llmtest.Call{ID: "c", Name: "wait", Arguments: `{"n":2}`},
		),
		llmtest.Reply("ok"),
	)
	sink := &jsonlSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{barrier}, EventSink: sink, MaxToolParallel: n,
	}, "go")
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.Requests()[1].Messages
	tail := msgs[len(msgs)-n:]
	for i, id := range []string{"a", "b", "c"} {
		if tail[i].ToolCallID != id || tail[i].Content != `{"n":`+string(rune('0'+i))+`}` {
			t.Fatalf("tool result %d = %+v", i, tail[i])
		}
	}
	if res.ToolCalls != n {
		t.Fatalf("tool calls = %d", res.ToolCalls)
	}
	sink.validate(t, eventstest.Options{})
}

func TestBadCallsBecomeErrorResults(t *testing.T) {
	panicky := &fakeTool{name: "boom", class: tools.ClassSafe, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		panic("kaput")
	}}
	rm := &fakeTool{name: "rm", class: tools.ClassDestructive, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		t.Error("a destructive call ran despite the default policy")
		return tools.Result{}, nil
	}}
	srv := llmtest.New(t,
		llmtest.CallTools(
			llmtest.Call{ID: "p", Name: "boom", Arguments: `{}`},
			llmtest.Call{ID: "u", Name: "nosuch", Arguments: `{}`},
			llmtest.Call{ID: "j", Name: "echo", Arguments: `{"broken":`},
			llmtest.Call{ID: "d", Name: "rm", Arguments: `{}`},
		),
		llmtest.Reply("recovered"),
	)
	sink := &jsonlSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{panicky, rm, echoTool()}, EventSink: sink,
	}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "recovered" {
		t.Fatalf("answer %q", res.Answer)
	}
	msgs := srv.Requests()[1].Messages
	tail := msgs[len(msgs)-4:]
	for i, want := range []string{"panic", "unknown tool \"nosuch\"", "not valid JSON", "destructive"} {
		if !strings.HasPrefix(tail[i].Content, "error:") || !strings.Contains(tail[i].Content, want) {
			t.Fatalf("result %d = %q, want error mentioning %q", i, tail[i].Content, want)
		}
	}
	evs := sink.validate(t, eventstest.Options{})
	classes := map[string]string{}
	for _, e := range evs {
		if e.Type == events.ToolCallFailed {
			classes[e.Data["call_id"].(string)] = e.Data["error_class"].(string)
		}
	}
	wantClasses := map[string]string{"p": "tool_panic", "u": "unknown_tool", "j": "invalid_arguments", "d": "denied"}
	for id, c := range wantClasses {
		if classes[id] != c {
			t.Fatalf("call %s error_class = %q, want %q (all: %v)", id, classes[id], c, classes)
		}
	}
}

func TestMaxIterations(t *testing.T) {
	srv := llmtest.NewHandler(t, func(llmtest.Recorded) llmtest.Turn {
		return llmtest.CallTools(llmtest.Call{Name: "echo", Arguments: `{}`})
	})
	sink := &jsonlSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{echoTool()}, MaxIterations: 3, EventSink: sink,
	}, "loop forever")
	if !errors.Is(err, agent.ErrMaxIterations) || !strings.Contains(err.Error(), "3 iterations") {
		t.Fatalf("err = %v", err)
	}
	if res.Iterations != 3 || srv.Calls() != 3 {
		t.Fatalf("iterations %d, calls %d", res.Iterations, srv.Calls())
	}
	evs := sink.validate(t, eventstest.Options{})
	if last := evs[len(evs)-1]; last.Type != events.RunFailed || last.Data["error_class"] != "max_iterations" {
		t.Fatalf("last event %+v", last)
	}
}

func TestCancellationEndsWithRunFailed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := &fakeTool{name: "block", class: tools.ClassSafe, run: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		cancel()
		<-ctx.Done()
		return tools.Result{}, ctx.Err()
	}}
	srv := llmtest.New(t, llmtest.CallTools(llmtest.Call{ID: "b", Name: "block", Arguments: `{}`}))
	sink := &jsonlSink{}
	_, err := agent.Run(ctx, agent.Config{LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{block}, EventSink: sink}, "wait")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	evs := sink.validate(t, eventstest.Options{})
	last := evs[len(evs)-1]
	if last.Type != events.RunFailed || last.Data["error_class"] != "context_canceled" {
		t.Fatalf("last event %+v", last)
	}
}

func TestIncludeArgsAndRedaction(t *testing.T) {
	const secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
	leaky := &fakeTool{name: "leak", class: tools.ClassSafe, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "key is " + secret}, nil
	}}
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "x", Name: "leak", Arguments: `{"token":"` + secret + `"}`}),
		llmtest.Reply("fine"),
	)
	red := redact.New()
	red.AddValue(secret)
	sink := &jsonlSink{}
	if _, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{leaky}, EventSink: sink, EventsIncludeArgs: true, Redactor: red,
	}, "go"); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Requests()[1].Messages
	if strings.Contains(msgs[len(msgs)-1].Content, secret) {
		t.Fatal("secret reached the model in tool output")
	}
	evs := sink.validate(t, eventstest.Options{AllowArgs: true})
	if strings.Contains(sink.buf.String(), secret) {
		t.Fatal("secret in event stream")
	}
	var sawArgs bool
	for _, e := range evs {
		if e.Type == events.ToolCallStarted {
			_, sawArgs = e.Data["args"]
		}
	}
	if !sawArgs {
		t.Fatal("args missing with EventsIncludeArgs")
	}
}

func TestModelErrorFailsRun(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 401, ErrorMessage: "bad key", ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key"})
	sink := &jsonlSink{}
	_, err := agent.Run(context.Background(), agent.Config{LLM: newClient(t, srv.URL), Model: "m", EventSink: sink}, "hi")
	if !errors.Is(err, llm.ErrUnauthorized) {
		t.Fatalf("err = %v", err)
	}
	evs := sink.validate(t, eventstest.Options{})
	if last := evs[len(evs)-1]; last.Data["error_class"] != "llm_unauthorized" {
		t.Fatalf("last %+v", last)
	}
}

func TestSyntheticCallIDs(t *testing.T) {
	// A provider that sends tool calls without ids: the agent assigns
	// it<iteration>-call<index> and pairs events by it.
	c := &idlessLLM{}
	sink := &jsonlSink{}
	if _, err := agent.Run(context.Background(), agent.Config{LLM: c, Model: "m", Tools: []tools.Tool{echoTool()}, EventSink: sink}, "go"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range sink.validate(t, eventstest.Options{}) {
		if e.Type == events.ToolCallStarted {
			ids = append(ids, e.Data["call_id"].(string))
		}
	}
	if strings.Join(ids, ",") != "it1-call0,it1-call1" && strings.Join(ids, ",") != "it1-call1,it1-call0" {
		t.Fatalf("call ids %v", ids)
	}
}

// idlessLLM answers the first call with two id-less tool calls, then
// with a final answer.
type idlessLLM struct{ n int }

func (l *idlessLLM) Complete(_ context.Context, _ llm.Request) (*llm.Response, error) {
	l.n++
	if l.n == 1 {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{Function: llm.FunctionCall{Name: "echo", Arguments: "{}"}},
			{Function: llm.FunctionCall{Name: "echo", Arguments: "{}"}},
		}}}, nil
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}}, nil
}

func TestSurvivalTrimRetriesOnce(t *testing.T) {
	big := strings.Repeat("z", 50000)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "a", Name: "big", Arguments: `{}`}),
		llmtest.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded", ErrorMessage: "maximum context length exceeded"},
		llmtest.Reply("made it"),
	)
	bigTool := &fakeTool{name: "big", class: tools.ClassSafe, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: big}, nil
	}}
	sink := &jsonlSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{bigTool}, EventSink: sink, MaxToolOutputBytes: 1 << 20,
	}, "go")
	if err != nil || res.Answer != "made it" {
		t.Fatalf("res %+v err %v", res, err)
	}
	last := srv.Requests()[2].Messages
	if n := len(last[len(last)-1].Content); n > 8<<10 {
		t.Fatalf("tool result not truncated in survival mode: %d bytes", n)
	}
	var trimmed bool
	for _, e := range sink.validate(t, eventstest.Options{}) {
		if e.Type == events.ContextTrimmed && e.Data["mode"] == "survival" {
			trimmed = true
		}
	}
	if !trimmed {
		t.Fatal("no context_trimmed survival event")
	}
}

// assessPanics panics while assessing, before any event was emitted.
type assessPanics struct{ fakeTool }

func (a *assessPanics) Assess(json.RawMessage) (tools.Assessment, error) { panic("assess boom") }

func TestPanicInAssessKeepsEventPair(t *testing.T) {
	bad := &assessPanics{fakeTool{name: "weird", class: tools.ClassSafe}}
	srv := llmtest.New(t, llmtest.CallTools(llmtest.Call{ID: "w", Name: "weird", Arguments: `{}`}), llmtest.Reply("ok"))
	sink := &jsonlSink{}
	if _, err := agent.Run(context.Background(), agent.Config{LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{bad}, EventSink: sink}, "go"); err != nil {
		t.Fatal(err)
	}
	sink.validate(t, eventstest.Options{}) // pairs every started with a failed
}

func TestRunStartedData(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("ok"))
	sink := &jsonlSink{}
	_, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", EventSink: sink,
		RunStartedData: map[string]any{"extensions": []any{"srv: loaded"}, "model": "forged"},
	}, "hi")
	if err != nil {
		t.Fatal(err)
	}
	evs := sink.validate(t, eventstest.Options{})
	d := evs[0].Data
	if evs[0].Type != events.RunStarted || d["model"] != "m" || d["extensions"] == nil {
		t.Fatalf("run_started = %+v; want the loop's model and the added extensions field", evs[0])
	}
}

// Config.Notices is asked before every model call; what it says reaches
// the next request as a system message, stays in the transcript, and is
// added once.
func TestNoticesReachTheNextCall(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "echo", Arguments: `{}`}),
		llmtest.CallTools(llmtest.Call{ID: "c2", Name: "echo", Arguments: `{}`}),
		llmtest.Reply("done"),
	)
	var mu sync.Mutex
	calls := 0
	notices := func() string {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 2 { // news arrives while the first tool runs
			return `[odek] MCP server "fx" changed its tools — removed: echo`
		}
		return ""
	}
	if _, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{echoTool()}, Notices: notices,
	}, "go"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	count := func(r llmtest.Recorded) int {
		n := 0
		for _, m := range r.Messages {
			if m.Role == llm.RoleSystem && strings.Contains(m.Content, "removed: echo") {
				n++
			}
		}
		return n
	}
	if len(reqs) != 3 || count(reqs[0]) != 0 || count(reqs[1]) != 1 || count(reqs[2]) != 1 {
		t.Fatalf("notice per request: %d requests, counts %d %d %d", len(reqs), count(reqs[0]), count(reqs[1]), count(reqs[2]))
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != llm.RoleSystem {
		t.Fatalf("the notice is not the newest message of the call after it arrived: %+v", last)
	}
}

func TestRunRefusesAnInvalidToolName(t *testing.T) {
	model := &idlessLLM{}
	_, err := agent.Run(context.Background(), agent.Config{LLM: model, Model: "m", Tools: []agent.Tool{&fakeTool{name: "has space"}}}, "goal")
	if !errors.Is(err, agent.ErrInvalidToolName) || !strings.Contains(err.Error(), `"has space"`) || model.n != 0 {
		t.Fatalf("err = %v after %d model calls, want ErrInvalidToolName naming the tool before any", err, model.n)
	}
}
