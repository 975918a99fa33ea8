package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/clip"
	"github.com/odekrun/odek/internal/redact"
	"github.com/sirupsen/logrus"
)

type run struct {
	cfg      Config
	byName   map[string]Tool
	specs    []ToolSpec
	names    string // comma-separated tool names for "unknown tool" errors
	em       *events.Emitter
	log      logrus.FieldLogger
	maxIter  int
	parallel int
	maxOut   int
	runID    string
	warned   map[string]bool // limits SignalBudgetWarning was sent for
	// specTokens estimates the tool declarations sent with every request.
	specTokens int
}

// patternRedactor is the Redactor of a Config without one: credential
// patterns only.
var patternRedactor Redactor = redact.New()

func newRun(cfg Config) (*run, error) {
	if cfg.LLM == nil {
		return nil, ErrNoLLM
	}
	if cfg.Model == "" {
		return nil, ErrNoModel
	}
	r := &run{cfg: cfg, byName: make(map[string]Tool, len(cfg.Tools))}
	names := make([]string, 0, len(cfg.Tools))
	for _, t := range cfg.Tools {
		d := t.Definition()
		if err := ValidateToolName(d.Name); err != nil {
			return nil, err
		}
		if _, dup := r.byName[d.Name]; dup {
			return nil, fmt.Errorf("agent: tool %q is registered twice", d.Name)
		}
		r.byName[d.Name] = t
		params := d.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.specs = append(r.specs, ToolSpec{Type: "function", Function: FunctionSpec{
			Name: d.Name, Description: d.Description, Parameters: params}})
		names = append(names, d.Name)
	}
	sort.Strings(names)
	r.names = strings.Join(names, ", ")
	for _, s := range r.specs {
		r.specTokens += (len(s.Function.Name)+len(s.Function.Description)+len(s.Function.Parameters))/4 + 8
	}
	r.maxIter = orDefault(cfg.MaxIterations, DefaultMaxIterations)
	r.parallel = orDefault(cfg.MaxToolParallel, DefaultMaxToolParallel)
	r.maxOut = orDefault(cfg.MaxToolOutputBytes, DefaultMaxToolOutputBytes)
	r.log = cfg.Logger
	if r.log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		r.log = l
	}
	if r.cfg.Redactor == nil {
		r.cfg.Redactor = patternRedactor
	}
	if r.cfg.Policy.Classes == nil && r.cfg.Policy.NonInteractive == "" {
		r.cfg.Policy = DefaultPolicy()
	}
	return r, nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func (r *run) run(ctx context.Context, goal string) (*Result, error) {
	start := time.Now()
	runID := r.cfg.RunID
	if runID == "" {
		runID = events.NewRunID()
	}
	// Without a sink the nil *Emitter turns every emit into a no-op, which
	// spares the drain goroutine's wake-ups (measurable in CPU per
	// iteration; see docs/BENCHMARKS.md).
	if r.cfg.EventSink != nil {
		r.em = events.NewEmitter(runID, r.cfg.EventSink, events.Options{
			Redact: r.cfg.Redactor.String,
			OnError: func(err error) {
				r.log.WithField("run_id", runID).WithError(err).Warn("event sink failed")
			},
		})
	}
	if r.cfg.SessionID != "" {
		r.em.SetSessionID(r.cfg.SessionID)
	}
	r.runID = runID
	res := &Result{RunID: runID}
	emit(r.em, 0, "", events.RunStartedData{Model: r.cfg.Model, Sandbox: r.cfg.Sandboxed, MaxIterations: r.maxIter, Extra: r.cfg.RunStartedData})

	system := r.cfg.SystemPrompt
	if system == "" {
		system = DefaultSystemPrompt
	}
	// Room for a few steps; most runs end in a handful of iterations, and
	// sizing for maxIter (180 messages by default) would zero and scan
	// ~16 KB per run for nothing. append grows it for long runs.
	msgs := make([]Message, 0, len(r.cfg.History)+2+2*min(r.maxIter, 8))
	msgs = append(msgs, Message{Role: RoleSystem, Content: system})
	msgs = append(msgs, r.cfg.History...)
	msgs = append(msgs, Message{Role: RoleUser, Content: goal, Images: r.cfg.GoalImages})

	var err error
	if r.cfg.OnStart != nil {
		err = r.cfg.OnStart(ctx, r.callInfo(runID), goal)
	}
	if err == nil {
		err = r.loopWithBudget(ctx, &msgs, res)
	}
	if r.cfg.OnEnd != nil {
		r.cfg.OnEnd(context.WithoutCancel(ctx), r.callInfo(runID), res.Answer, err)
	}

	res.Duration = time.Since(start)
	res.Messages = msgs[1:]
	var exceeded *BudgetExceededError
	if errors.As(err, &exceeded) {
		emit(r.em, 0, "", events.BudgetExceededData{LimitName: exceeded.Limit, Observed: exceeded.Observed, Limit: exceeded.Max})
	}
	var final events.Payload = events.RunCompletedData{Duration: res.Duration, InputTokens: res.Usage.PromptTokens,
		OutputTokens: res.Usage.CompletionTokens, LLMDuration: res.LLMDuration, CachedInputTokens: res.Usage.CachedTokens}
	if err != nil {
		final = events.RunFailedData{Duration: res.Duration, ErrorClass: ErrorClass(err), LLMDuration: res.LLMDuration,
			OutputTokens: res.Usage.CompletionTokens}
	}
	// The closing event must reach the sink even when ctx is cancelled
	// (SIGTERM): it gets its own bounded context.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalEventTimeout)
	if ferr := r.em.Final(fctx, final.EventType(), final.Data()); ferr != nil {
		r.log.WithError(ferr).Warn("closing event not written")
	}
	cancel()
	res.DroppedEvents = r.em.Dropped()
	return res, err
}

// loopWithBudget runs the loop under the budget's runtime deadline and
// turns the deadline's expiry into the typed runtime budget error.
func (r *run) loopWithBudget(ctx context.Context, msgs *[]Message, res *Result) error {
	b := r.cfg.Budget
	if b == nil {
		return r.loop(ctx, msgs, res)
	}
	deadline, ok := b.Deadline()
	if !ok {
		return r.loop(ctx, msgs, res)
	}
	rctx, cancel := context.WithDeadlineCause(ctx, deadline, errRuntimeBudget)
	defer cancel()
	err := r.loop(rctx, msgs, res)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(rctx), errRuntimeBudget) {
		if rerr := b.CheckRuntime(time.Now()); rerr != nil {
			return rerr
		}
	}
	return err
}

var errRuntimeBudget = errors.New("agent: runtime budget exhausted")

func (r *run) loop(ctx context.Context, msgs *[]Message, res *Result) error {
	for iter := 1; iter <= r.maxIter; iter++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.cfg.Notices != nil {
			if n := r.cfg.Notices(); n != "" {
				*msgs = append(*msgs, Message{Role: RoleSystem, Content: n})
			}
		}
		r.takeSteer(ctx, msgs) // steer.go: messages the user sent meanwhile
		if err := r.compact(ctx, iter, msgs, res); err != nil {
			return err
		}
		resp, err := r.complete(ctx, iter, *msgs) // stream.go
		if err != nil && errors.Is(err, ErrImagesRefused) && r.cfg.DropRefusedImages && ctx.Err() == nil && dropImages(*msgs) {
			r.log.WithField("run_id", r.runID).WithError(err).Warn("the model refused the images; asking again without them")
			resp, err = r.complete(ctx, iter, *msgs)
		}
		if err != nil && errors.Is(err, ErrContextLength) && ctx.Err() == nil {
			// Survival: cut to the bone and retry this iteration once.
			trimmed, dropped, truncated := trimSurvival(*msgs)
			*msgs = trimmed
			emit(r.em, iter, "", events.ContextTrimmedData{Mode: "survival", DroppedGroups: dropped, TruncatedResults: truncated})
			resp, err = r.complete(ctx, iter, *msgs)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("agent: model call %d: %w", iter, err)
		}
		res.Iterations = iter
		res.Usage = res.Usage.Add(resp.Usage)
		res.LLMDuration += resp.Timing.Duration
		var budgetErr error
		if r.cfg.Budget != nil {
			budgetErr = r.addUsage(resp.Usage)
			r.signalBudget(iter)
		}

		msg := resp.Message
		msg.Role = RoleAssistant
		for j := range msg.ToolCalls {
			if msg.ToolCalls[j].ID == "" {
				msg.ToolCalls[j].ID = "it" + strconv.Itoa(iter) + "-call" + strconv.Itoa(j)
			}
			msg.ToolCalls[j].Type = "function"
		}
		*msgs = append(*msgs, msg)
		if msg.Content != "" {
			res.Answer = msg.Content // kept as a partial answer if the run stops here
		}
		if budgetErr != nil {
			r.emitIteration(iter, res, resp, 0)
			return budgetErr
		}
		if len(msg.ToolCalls) == 0 {
			r.emitIteration(iter, res, resp, 0)
			res.Answer = msg.Content
			if iter < r.maxIter && r.takeSteer(ctx, msgs) {
				// The user wrote meanwhile: the answer must cover it too.
				r.persist(iter, *msgs)
				continue
			}
			if r.cfg.CheckAnswer != nil { // wiring point (issue 28): schema-checked answers
				fix, ev := r.cfg.CheckAnswer(msg.Content)
				if ev != nil {
					emit(r.em, iter, "", ev)
				}
				if fix != "" {
					*msgs = append(*msgs, Message{Role: RoleUser, Content: fix})
					r.persist(iter, *msgs)
					continue
				}
			}
			r.persist(iter, *msgs)
			return nil
		}
		allowed := len(msg.ToolCalls)
		if r.cfg.Budget != nil {
			allowed, budgetErr = r.cfg.Budget.ReserveToolCalls(allowed)
			r.signalBudget(iter)
		}
		results := r.runCalls(ctx, iter, msg.ToolCalls[:allowed])
		for _, c := range msg.ToolCalls[allowed:] {
			// Every call needs an answer in the transcript, even unrun ones.
			results = append(results, toolMessage(c.ID, "error: not run: "+budgetErr.Error()))
		}
		res.ToolCalls += allowed
		*msgs = append(*msgs, results...)
		r.emitIteration(iter, res, resp, allowed)
		if err := ctx.Err(); err != nil {
			return err // a step cut short by cancellation is not saved
		}
		r.persist(iter, *msgs)
		if budgetErr != nil {
			return budgetErr
		}
	}
	return fmt.Errorf("%w: the model was still calling tools after %d iterations (raise --max-iter or max_iterations)", ErrMaxIterations, r.maxIter)
}

// addUsage counts one response's tokens against the budget, the cached
// part apart when the budget prices it (CachedBudget).
func (r *run) addUsage(u Usage) error {
	if r.cfg.Budget == nil {
		return nil
	}
	if cb, ok := r.cfg.Budget.(CachedBudget); ok {
		return cb.AddUsageCached(u.PromptTokens, u.CachedTokens, u.CompletionTokens)
	}
	return r.cfg.Budget.AddUsage(u.PromptTokens, u.CompletionTokens)
}

func (r *run) emitIteration(iter int, res *Result, resp *Response, called int) {
	emit(r.em, iter, "", events.IterationCompletedData{
		InputTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.CompletionTokens, ToolsCalled: called,
		CallDuration: resp.Timing.Duration, TTFT: resp.Timing.TTFT, Generation: resp.Timing.Generation,
		CallInputTokens: resp.Usage.PromptTokens, CallOutputTokens: resp.Usage.CompletionTokens,
	})
}

// runCalls executes the calls of one reply concurrently, bounded by
// r.parallel, and returns the tool messages in the original call order.
func (r *run) runCalls(ctx context.Context, iter int, calls []ToolCall) []Message {
	out := make([]Message, len(calls))
	if len(calls) == 1 {
		out[0] = r.runCall(ctx, iter, calls[0])
		return out
	}
	sem := make(chan struct{}, r.parallel)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i] = toolMessage(c.ID, "error: run cancelled before the call started")
				return
			}
			defer func() { <-sem }()
			out[i] = r.runCall(ctx, iter, c)
		}()
	}
	wg.Wait()
	return out
}

func toolMessage(id, text string) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: text}
}

// runCall runs one tool call through assessment, policy and execution and
// emits its started/completed|failed pair. It never panics.
func (r *run) runCall(ctx context.Context, iter int, c ToolCall) (msg Message) {
	start := time.Now()
	name := c.Function.Name
	args := c.Function.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	sum := sha256.Sum256([]byte(args))
	started := events.ToolCallStartedData{CallID: c.ID, ArgsSHA256: hex.EncodeToString(sum[:]), ArgsBytes: len(args)}
	if r.cfg.EventsIncludeArgs {
		started.Args = args
	}
	fail := func(class, text string) Message {
		emit(r.em, iter, name, events.ToolCallFailedData{CallID: c.ID, Duration: time.Since(start), ErrorClass: class})
		return toolMessage(c.ID, "error: "+r.cfg.Redactor.String(text))
	}
	startedSent := false
	emitStarted := func() {
		emit(r.em, iter, name, started)
		startedSent = true
	}
	defer func() {
		if p := recover(); p != nil {
			if !startedSent { // a panic in Assess: keep the started/failed pair
				emitStarted()
			}
			r.log.WithFields(logrus.Fields{"tool": name, "panic": fmt.Sprint(p)}).Error("tool panicked\n" + string(debug.Stack()))
			msg = fail("tool_panic", fmt.Sprintf("tool %q crashed (panic: %v); the run goes on", name, p))
		}
	}()

	t, ok := r.byName[name]
	if !ok {
		emitStarted()
		return fail("unknown_tool", fmt.Sprintf("unknown tool %q; available tools: %s", name, r.names))
	}
	if !json.Valid([]byte(args)) {
		emitStarted()
		return fail("invalid_arguments", fmt.Sprintf("the arguments of %s are not valid JSON; send a JSON object matching the tool's schema", name))
	}
	raw := json.RawMessage(args)
	a, err := t.Assess(raw)
	if err != nil {
		emitStarted()
		return fail("invalid_arguments", fmt.Sprintf("%s: %v", name, err))
	}
	summary := make(map[string]any, len(a.Summary)+1)
	for k, v := range a.Summary {
		summary[k] = v
	}
	summary["class"] = string(a.Class)
	started.ArgsSummary = summary
	emitStarted()

	if len(a.Ask) > 0 { // what the question shows beyond the summary is masked first
		masked := make(map[string]string, len(a.Ask))
		for k, v := range a.Ask {
			masked[k] = r.cfg.Redactor.String(v)
		}
		a.Ask = masked
	}
	if allowed, reason := Authorize(ctx, r.cfg.Policy, r.cfg.Prompter, name, a); !allowed {
		return fail("denied", reason)
	}
	res, err := t.Run(r.withCall(ctx, r.runID, name, c.ID), raw)
	if err != nil {
		return fail(ErrorClass(err), fmt.Sprintf("%s failed: %v", name, err))
	}
	text := clip.Text(r.cfg.Redactor.String(res.Text), r.maxOut)
	if res.IsError {
		emit(r.em, iter, name, events.ToolCallFailedData{CallID: c.ID, Duration: time.Since(start), ErrorClass: "tool_error"})
		return toolMessage(c.ID, text)
	}
	emit(r.em, iter, name, events.ToolCallCompletedData{CallID: c.ID, Duration: time.Since(start),
		ResultBytes: len(text), ArtifactCount: res.ArtifactCount})
	return toolMessage(c.ID, text)
}

// persist hands a completed step to Config.Persist and reports it.
func (r *run) persist(iter int, msgs []Message) {
	if r.cfg.Persist == nil {
		return
	}
	if err := r.cfg.Persist(msgs[1:]); err != nil {
		r.log.WithError(err).Warn("session not saved")
		return
	}
	emit(r.em, iter, "", events.SessionSavedData{MessageCount: len(msgs) - 1})
}

// request builds the model request for the transcript msgs. The current
// plan, when Config.Plan has one, is appended as a final system message:
// it is rebuilt for every request and never stored in the transcript, so
// trimming can never drop it and sessions do not accumulate stale copies.
func (r *run) request(msgs []Message) Request {
	if pm, ok := r.planMessage(); ok {
		withPlan := make([]Message, len(msgs), len(msgs)+1)
		copy(withPlan, msgs)
		msgs = append(withPlan, pm)
	}
	return Request{Model: r.cfg.Model, Messages: msgs, Tools: r.specs, OutputSchema: r.cfg.OutputSchema}
}

// planMessage renders Config.Plan; ok is false when there is no plan.
func (r *run) planMessage() (Message, bool) {
	if r.cfg.Plan == nil {
		return Message{}, false
	}
	b := r.cfg.Plan.Block()
	if b == "" {
		return Message{}, false
	}
	return Message{Role: RoleSystem, Content: b}, true
}

// emit sends a typed payload. Generic, so the payload is not boxed into an
// interface (an allocation per event); a run without a sink skips it.
func emit[P events.Payload](em *events.Emitter, iter int, tool string, p P) {
	if em == nil {
		return
	}
	em.Emit(p.EventType(), iter, tool, p.Data())
}
