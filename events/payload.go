package events

import (
	"encoding/json"
	"math"
	"time"
)

// Payload is the typed data of one odek.event/v1 type. Data renders it
// into the map an Event carries: the contract's field names, units and
// presence rules live in these methods, once. Each payload type also has
// a Decode method that reads such a map back — built in this process or
// decoded from JSON — ignoring fields it does not know (the contract's
// additive rule) and leaving missing ones zero.
//
// The structs hold measurements in Go units (time.Duration, counts); the
// wire fields derived from them (tokens_per_second) are methods.
type Payload interface {
	EventType() Type
	Data() map[string]any
}

// EmitPayload is Emit with a typed payload.
func (e *Emitter) EmitPayload(iteration int, tool string, p Payload) {
	if e == nil {
		return
	}
	e.Emit(p.EventType(), iteration, tool, p.Data())
}

// RunStartedData is the data of run_started.
type RunStartedData struct {
	Model         string
	Sandbox       bool
	MaxIterations int
	// Extra holds further fields (the extension servers' report); the
	// fields above win over same-named keys. Decode puts every field it
	// does not know here.
	Extra map[string]any
}

func (RunStartedData) EventType() Type { return RunStarted }

func (d RunStartedData) Data() map[string]any {
	m := make(map[string]any, len(d.Extra)+3)
	for k, v := range d.Extra {
		m[k] = v
	}
	m["model"], m["sandbox"], m["max_iterations"] = d.Model, d.Sandbox, d.MaxIterations
	return m
}

func (d *RunStartedData) Decode(m map[string]any) {
	*d = RunStartedData{}
	d.Model, _ = m["model"].(string)
	d.Sandbox, _ = m["sandbox"].(bool)
	d.MaxIterations = Int(m["max_iterations"])
	for k, v := range m {
		switch k {
		case "model", "sandbox", "max_iterations":
			continue
		}
		if d.Extra == nil {
			d.Extra = map[string]any{}
		}
		d.Extra[k] = v
	}
}

// IterationCompletedData is the data of iteration_completed. Token counts
// are cumulative over the run, Call* ones are this iteration's model
// call; zero durations are unknown and left out.
type IterationCompletedData struct {
	InputTokens, OutputTokens int
	ToolsCalled               int
	CallDuration, TTFT        time.Duration
	Generation                time.Duration
	CallInputTokens           int
	CallOutputTokens          int
}

func (IterationCompletedData) EventType() Type { return IterationCompleted }

func (d IterationCompletedData) Data() map[string]any {
	m := make(map[string]any, 10) // room for every field: no growth
	m["input_tokens"], m["output_tokens"], m["tools_called"] = d.InputTokens, d.OutputTokens, d.ToolsCalled
	if d.CallDuration > 0 {
		m["call_duration_ms"] = Millis(d.CallDuration)
	}
	if d.TTFT > 0 {
		m["ttft_ms"] = Millis(d.TTFT)
	}
	if d.Generation > 0 {
		m["generation_ms"] = Millis(d.Generation)
	}
	if d.CallInputTokens > 0 {
		m["call_input_tokens"] = d.CallInputTokens
	}
	if d.CallOutputTokens > 0 {
		m["call_output_tokens"] = d.CallOutputTokens
		if d.CallDuration > 0 {
			m["tokens_per_second"] = d.TokensPerSecond()
		}
		if d.Generation > 0 {
			m["generation_tokens_per_second"] = d.GenerationTokensPerSecond()
		}
	}
	return m
}

// TokensPerSecond is the call's output tokens over its duration, 0 when
// unknown.
func (d IterationCompletedData) TokensPerSecond() float64 {
	return perSecond(d.CallOutputTokens, d.CallDuration)
}

// GenerationTokensPerSecond is the call's output tokens over its
// generation time (first delta to end of stream), 0 when unknown.
func (d IterationCompletedData) GenerationTokensPerSecond() float64 {
	return perSecond(d.CallOutputTokens, d.Generation)
}

func (d *IterationCompletedData) Decode(m map[string]any) {
	*d = IterationCompletedData{
		InputTokens: Int(m["input_tokens"]), OutputTokens: Int(m["output_tokens"]), ToolsCalled: Int(m["tools_called"]),
		CallDuration: fromMillis(m["call_duration_ms"]), TTFT: fromMillis(m["ttft_ms"]), Generation: fromMillis(m["generation_ms"]),
		CallInputTokens: Int(m["call_input_tokens"]), CallOutputTokens: Int(m["call_output_tokens"]),
	}
}

// ToolCallStartedData is the data of tool_call_started.
type ToolCallStartedData struct {
	CallID     string
	ArgsSHA256 string // hex SHA-256 of the raw arguments
	ArgsBytes  int
	// ArgsSummary is the low-cardinality audit summary (class, argv0,
	// path, host); nil is sent as {}.
	ArgsSummary map[string]any
	// Args are the raw (redacted) arguments, sent only when non-empty
	// (Config.EventsIncludeArgs).
	Args string
}

func (ToolCallStartedData) EventType() Type { return ToolCallStarted }

func (d ToolCallStartedData) Data() map[string]any {
	sum := d.ArgsSummary
	if sum == nil {
		sum = map[string]any{}
	}
	m := make(map[string]any, 5)
	m["call_id"], m["args_sha256"], m["args_bytes"], m["args_summary"] = d.CallID, d.ArgsSHA256, d.ArgsBytes, sum
	if d.Args != "" {
		m["args"] = d.Args
	}
	return m
}

func (d *ToolCallStartedData) Decode(m map[string]any) {
	*d = ToolCallStartedData{ArgsBytes: Int(m["args_bytes"])}
	d.CallID, _ = m["call_id"].(string)
	d.ArgsSHA256, _ = m["args_sha256"].(string)
	d.ArgsSummary, _ = m["args_summary"].(map[string]any)
	d.Args, _ = m["args"].(string)
}

// ToolCallCompletedData is the data of tool_call_completed.
type ToolCallCompletedData struct {
	CallID        string
	Duration      time.Duration // sent in whole milliseconds
	ResultBytes   int
	ArtifactCount int
}

func (ToolCallCompletedData) EventType() Type { return ToolCallCompleted }

func (d ToolCallCompletedData) Data() map[string]any {
	return map[string]any{"call_id": d.CallID, "duration_ms": d.Duration.Milliseconds(),
		"result_bytes": d.ResultBytes, "artifact_count": d.ArtifactCount}
}

func (d *ToolCallCompletedData) Decode(m map[string]any) {
	*d = ToolCallCompletedData{Duration: fromMillis(m["duration_ms"]), ResultBytes: Int(m["result_bytes"]), ArtifactCount: Int(m["artifact_count"])}
	d.CallID, _ = m["call_id"].(string)
}

// ToolCallFailedData is the data of tool_call_failed.
type ToolCallFailedData struct {
	CallID     string
	Duration   time.Duration // sent in whole milliseconds
	ErrorClass string
}

func (ToolCallFailedData) EventType() Type { return ToolCallFailed }

func (d ToolCallFailedData) Data() map[string]any {
	return map[string]any{"call_id": d.CallID, "duration_ms": d.Duration.Milliseconds(), "error_class": d.ErrorClass}
}

func (d *ToolCallFailedData) Decode(m map[string]any) {
	*d = ToolCallFailedData{Duration: fromMillis(m["duration_ms"])}
	d.CallID, _ = m["call_id"].(string)
	d.ErrorClass, _ = m["error_class"].(string)
}

// SessionSavedData is the data of session_saved.
type SessionSavedData struct {
	MessageCount int
}

func (SessionSavedData) EventType() Type { return SessionSaved }

func (d SessionSavedData) Data() map[string]any {
	return map[string]any{"message_count": d.MessageCount}
}

func (d *SessionSavedData) Decode(m map[string]any) { d.MessageCount = Int(m["message_count"]) }

// ContextTrimmedData is the data of context_trimmed.
type ContextTrimmedData struct {
	Mode             string // "proactive" or "survival"
	DroppedGroups    int
	TruncatedResults int
}

func (ContextTrimmedData) EventType() Type { return ContextTrimmed }

func (d ContextTrimmedData) Data() map[string]any {
	return map[string]any{"mode": d.Mode, "dropped_groups": d.DroppedGroups, "truncated_results": d.TruncatedResults}
}

func (d *ContextTrimmedData) Decode(m map[string]any) {
	*d = ContextTrimmedData{DroppedGroups: Int(m["dropped_groups"]), TruncatedResults: Int(m["truncated_results"])}
	d.Mode, _ = m["mode"].(string)
}

// ContextCompactedData is the data of context_compacted: the oldest
// message groups were folded into one digest written by a side call to
// the model.
type ContextCompactedData struct {
	BeforeTokens, AfterTokens int // estimated request tokens before and after
	FoldedGroups              int // message groups the digest replaced
	// SideCallInputTokens and SideCallOutputTokens are the digest call's
	// usage (counted against the run's budget).
	SideCallInputTokens, SideCallOutputTokens int
}

func (ContextCompactedData) EventType() Type { return ContextCompacted }

func (d ContextCompactedData) Data() map[string]any {
	return map[string]any{"before_tokens": d.BeforeTokens, "after_tokens": d.AfterTokens, "folded_groups": d.FoldedGroups,
		"side_call_input_tokens": d.SideCallInputTokens, "side_call_output_tokens": d.SideCallOutputTokens}
}

func (d *ContextCompactedData) Decode(m map[string]any) {
	*d = ContextCompactedData{BeforeTokens: Int(m["before_tokens"]), AfterTokens: Int(m["after_tokens"]),
		FoldedGroups: Int(m["folded_groups"]), SideCallInputTokens: Int(m["side_call_input_tokens"]),
		SideCallOutputTokens: Int(m["side_call_output_tokens"])}
}

// BudgetExceededData is the data of budget_exceeded.
type BudgetExceededData struct {
	LimitName string // runtime, tool_calls, input_tokens, output_tokens, total_tokens, cost_usd
	Observed  float64
	Limit     float64
}

func (BudgetExceededData) EventType() Type { return BudgetExceeded }

func (d BudgetExceededData) Data() map[string]any {
	return map[string]any{"limit_name": d.LimitName, "observed": d.Observed, "limit": d.Limit}
}

func (d *BudgetExceededData) Decode(m map[string]any) {
	*d = BudgetExceededData{Observed: Float(m["observed"]), Limit: Float(m["limit"])}
	d.LimitName, _ = m["limit_name"].(string)
}

// RunCompletedData is the data of run_completed.
type RunCompletedData struct {
	Duration                  time.Duration // run wall clock, sent in whole ms
	InputTokens, OutputTokens int           // run totals
	// LLMDuration is the sum of the model calls; 0 ⇒ unknown, left out.
	LLMDuration time.Duration
	// CachedInputTokens is the part of InputTokens the provider's prompt
	// cache served; sent with cached_share (their ratio) when > 0.
	CachedInputTokens int
}

func (RunCompletedData) EventType() Type { return RunCompleted }

func (d RunCompletedData) Data() map[string]any {
	m := map[string]any{"duration_ms": d.Duration.Milliseconds(), "input_tokens": d.InputTokens, "output_tokens": d.OutputTokens}
	addLLM(m, d.LLMDuration, d.OutputTokens)
	if d.CachedInputTokens > 0 && d.InputTokens > 0 {
		m["cached_input_tokens"] = d.CachedInputTokens
		m["cached_share"] = float64(d.CachedInputTokens) / float64(d.InputTokens)
	}
	return m
}

// TokensPerSecond is the run's output tokens over LLMDuration, 0 when
// unknown.
func (d RunCompletedData) TokensPerSecond() float64 { return perSecond(d.OutputTokens, d.LLMDuration) }

func (d *RunCompletedData) Decode(m map[string]any) {
	*d = RunCompletedData{Duration: fromMillis(m["duration_ms"]), InputTokens: Int(m["input_tokens"]),
		OutputTokens: Int(m["output_tokens"]), LLMDuration: fromMillis(m["llm_duration_ms"]), CachedInputTokens: Int(m["cached_input_tokens"])}
}

// RunFailedData is the data of run_failed.
type RunFailedData struct {
	Duration   time.Duration // run wall clock, sent in whole ms
	ErrorClass string
	// LLMDuration is the sum of the model calls measured before the
	// failure; 0 ⇒ none, left out.
	LLMDuration time.Duration
	// OutputTokens is not a field of run_failed: it derives
	// tokens_per_second. Decode leaves it 0.
	OutputTokens int
}

func (RunFailedData) EventType() Type { return RunFailed }

func (d RunFailedData) Data() map[string]any {
	m := map[string]any{"duration_ms": d.Duration.Milliseconds(), "error_class": d.ErrorClass}
	addLLM(m, d.LLMDuration, d.OutputTokens)
	return m
}

func (d *RunFailedData) Decode(m map[string]any) {
	*d = RunFailedData{Duration: fromMillis(m["duration_ms"]), LLMDuration: fromMillis(m["llm_duration_ms"])}
	d.ErrorClass, _ = m["error_class"].(string)
}

func addLLM(m map[string]any, llm time.Duration, out int) {
	if llm > 0 {
		m["llm_duration_ms"] = llm.Milliseconds()
		if out > 0 {
			m["tokens_per_second"] = perSecond(out, llm)
		}
	}
}

// PlanCreatedData is the data of plan_created.
type PlanCreatedData struct {
	Steps, Version int
}

func (PlanCreatedData) EventType() Type { return PlanCreated }

func (d PlanCreatedData) Data() map[string]any {
	return map[string]any{"steps": d.Steps, "version": d.Version}
}

func (d *PlanCreatedData) Decode(m map[string]any) {
	*d = PlanCreatedData{Steps: Int(m["steps"]), Version: Int(m["version"])}
}

// PlanUpdatedData is the data of plan_updated: the plan's counts after
// the change.
type PlanUpdatedData struct {
	Steps, Done, InProgress, Blocked, Pending, Version int
}

func (PlanUpdatedData) EventType() Type { return PlanUpdated }

func (d PlanUpdatedData) Data() map[string]any {
	return map[string]any{"steps": d.Steps, "done": d.Done, "in_progress": d.InProgress, "blocked": d.Blocked,
		"pending": d.Pending, "version": d.Version}
}

func (d *PlanUpdatedData) Decode(m map[string]any) {
	*d = PlanUpdatedData{Steps: Int(m["steps"]), Done: Int(m["done"]), InProgress: Int(m["in_progress"]),
		Blocked: Int(m["blocked"]), Pending: Int(m["pending"]), Version: Int(m["version"])}
}

// PlanBlockedData is the data of plan_blocked.
type PlanBlockedData struct {
	Steps, Blocked, Version int
}

func (PlanBlockedData) EventType() Type { return PlanBlocked }

func (d PlanBlockedData) Data() map[string]any {
	return map[string]any{"steps": d.Steps, "blocked": d.Blocked, "version": d.Version}
}

func (d *PlanBlockedData) Decode(m map[string]any) {
	*d = PlanBlockedData{Steps: Int(m["steps"]), Blocked: Int(m["blocked"]), Version: Int(m["version"])}
}

// SubagentDeniedData is the data of subagent_denied.
type SubagentDeniedData struct {
	TaskIndex     int
	Class, Reason string
}

func (SubagentDeniedData) EventType() Type { return SubagentDenied }

func (d SubagentDeniedData) Data() map[string]any {
	return map[string]any{"task_index": d.TaskIndex, "class": d.Class, "reason": d.Reason}
}

func (d *SubagentDeniedData) Decode(m map[string]any) {
	*d = SubagentDeniedData{TaskIndex: Int(m["task_index"])}
	d.Class, _ = m["class"].(string)
	d.Reason, _ = m["reason"].(string)
}

// SubagentSpawnedData is the data of subagent_spawned.
type SubagentSpawnedData struct {
	TaskID         string
	PID, Depth     int
	TimeoutSeconds int
	GoalSHA256     string // 16 hex chars; the goal itself is never sent
}

func (SubagentSpawnedData) EventType() Type { return SubagentSpawned }

func (d SubagentSpawnedData) Data() map[string]any {
	return map[string]any{"task_id": d.TaskID, "pid": d.PID, "depth": d.Depth,
		"timeout_seconds": d.TimeoutSeconds, "goal_sha256": d.GoalSHA256}
}

func (d *SubagentSpawnedData) Decode(m map[string]any) {
	*d = SubagentSpawnedData{PID: Int(m["pid"]), Depth: Int(m["depth"]), TimeoutSeconds: Int(m["timeout_seconds"])}
	d.TaskID, _ = m["task_id"].(string)
	d.GoalSHA256, _ = m["goal_sha256"].(string)
}

// SubagentCompletedData is the data of subagent_completed.
type SubagentCompletedData struct {
	TaskID, Status string
	// Counted says the child's result carried the counts below; without
	// it they are left out.
	Counted         bool
	Iterations      int
	DurationSeconds float64
	TokensUsed      int
	ArtifactCount   int
}

func (SubagentCompletedData) EventType() Type { return SubagentCompleted }

func (d SubagentCompletedData) Data() map[string]any {
	m := map[string]any{"task_id": d.TaskID, "status": d.Status}
	if d.Counted {
		m["iterations"], m["duration_seconds"], m["tokens_used"] = d.Iterations, d.DurationSeconds, d.TokensUsed
		m["artifact_count"] = d.ArtifactCount
	}
	return m
}

func (d *SubagentCompletedData) Decode(m map[string]any) {
	_, counted := m["iterations"]
	*d = SubagentCompletedData{Counted: counted, Iterations: Int(m["iterations"]), DurationSeconds: Float(m["duration_seconds"]),
		TokensUsed: Int(m["tokens_used"]), ArtifactCount: Int(m["artifact_count"])}
	d.TaskID, _ = m["task_id"].(string)
	d.Status, _ = m["status"].(string)
}

// SubagentConcurrencyWaitData is the data of subagent_concurrency_wait.
type SubagentConcurrencyWaitData struct {
	TaskIndex int
	Waited    time.Duration // sent in whole milliseconds
}

func (SubagentConcurrencyWaitData) EventType() Type { return SubagentConcurrencyWait }

func (d SubagentConcurrencyWaitData) Data() map[string]any {
	return map[string]any{"task_index": d.TaskIndex, "waited_ms": d.Waited.Milliseconds()}
}

func (d *SubagentConcurrencyWaitData) Decode(m map[string]any) {
	*d = SubagentConcurrencyWaitData{TaskIndex: Int(m["task_index"]), Waited: fromMillis(m["waited_ms"])}
}

// Millis renders a duration in milliseconds with microsecond resolution,
// the unit of the *_ms fields that are not whole milliseconds.
func Millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

func fromMillis(v any) time.Duration {
	return time.Duration(math.Round(Float(v) * float64(time.Millisecond)))
}

func perSecond(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return round2(float64(n) / d.Seconds())
}

func round2(f float64) float64 {
	return float64(int64(f*100+0.5)) / 100
}

// Float reads a numeric Data field whatever Go type holds it: the Go
// numbers an Emitter's caller stores, float64 or json.Number from decoded
// JSON. Anything else is 0.
func Float(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	case float32:
		return float64(x)
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return 0
}

// Int is Float truncated to an int (saturating at the int range).
func Int(v any) int {
	f := Float(v)
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt
	case f <= math.MinInt64:
		return math.MinInt
	}
	return int(f)
}
