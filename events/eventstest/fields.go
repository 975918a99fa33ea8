package eventstest

import "github.com/odekrun/odek/events"

// kind is the type and range a data field must have.
type kind int

const (
	kText        kind = iota // non-empty string
	kBool                    // true or false
	kCount                   // integer ≥ 0
	kPositiveInt             // integer ≥ 1
	kNumber                  // number ≥ 0
	kPositive                // number > 0 (optional speed fields: omitted when zero)
	kHex64                   // 64 lower-case hex digits
	kHex16                   // 16 lower-case hex digits
	kObject                  // JSON object
	kClass                   // stable low-cardinality class: [a-z][a-z0-9_]*, ≤ 64 bytes
	kEnum                    // one of field.enum
)

// field describes one data field of an event type.
type field struct {
	name     string
	kind     kind
	optional bool
	enum     []string
}

func req(name string, k kind) field { return field{name: name, kind: k} }
func opt(name string, k kind) field { return field{name: name, kind: k, optional: true} }
func enum(name string, values ...string) field {
	return field{name: name, kind: kEnum, enum: values}
}

// limitNames are the budget limits of budget_exceeded.
var limitNames = []string{"runtime", "tool_calls", "input_tokens", "output_tokens", "total_tokens", "cost_usd"}

// dataFields is the per-type data table of EXTENSIONS.md. Fields not listed
// are accepted (the additive rule); types not listed have no required
// fields.
var dataFields = map[events.Type][]field{
	events.RunStarted: {req("model", kText), req("sandbox", kBool), req("max_iterations", kCount)},
	events.IterationCompleted: {
		req("input_tokens", kCount), req("output_tokens", kCount), req("tools_called", kCount),
		opt("call_duration_ms", kPositive), opt("ttft_ms", kPositive), opt("generation_ms", kPositive),
		opt("call_input_tokens", kPositive), opt("call_output_tokens", kPositive),
		opt("tokens_per_second", kPositive), opt("generation_tokens_per_second", kPositive),
	},
	events.ToolCallStarted: {
		req("call_id", kText), req("args_sha256", kHex64), req("args_bytes", kCount), req("args_summary", kObject),
	},
	events.ToolCallCompleted: {
		req("call_id", kText), req("duration_ms", kCount), req("result_bytes", kCount), req("artifact_count", kCount),
	},
	events.ToolCallFailed: {req("call_id", kText), req("duration_ms", kCount), req("error_class", kClass)},
	events.SessionSaved:   {req("message_count", kCount)},
	events.ContextTrimmed: {
		enum("mode", "proactive", "survival"), req("dropped_groups", kCount), req("truncated_results", kCount),
	},
	events.ContextCompacted: {
		req("before_tokens", kCount), req("after_tokens", kCount), req("folded_groups", kCount),
		req("side_call_input_tokens", kCount), req("side_call_output_tokens", kCount),
	},
	events.BudgetExceeded: {enum("limit_name", limitNames...), req("observed", kNumber), req("limit", kNumber)},
	events.RunCompleted: {
		req("duration_ms", kCount), req("input_tokens", kCount), req("output_tokens", kCount),
		opt("llm_duration_ms", kCount), opt("tokens_per_second", kPositive),
		opt("cached_input_tokens", kCount), opt("cached_share", kNumber),
	},
	events.RunFailed: {
		req("duration_ms", kCount), req("error_class", kClass),
		opt("llm_duration_ms", kCount), opt("tokens_per_second", kPositive),
	},
	events.PlanCreated: {req("steps", kCount), req("version", kPositiveInt)},
	events.PlanUpdated: {
		req("steps", kCount), req("done", kCount), req("in_progress", kCount), req("blocked", kCount),
		req("pending", kCount), req("version", kPositiveInt),
	},
	events.PlanBlocked:    {req("steps", kCount), req("blocked", kCount), req("version", kPositiveInt)},
	events.SubagentDenied: {req("task_index", kCount), req("class", kText), req("reason", kText)},
	events.SubagentSpawned: {
		req("task_id", kText), req("pid", kPositiveInt), req("depth", kCount), req("timeout_seconds", kCount),
		req("goal_sha256", kHex16),
	},
	events.SubagentCompleted: {
		req("task_id", kText), req("status", kText),
		opt("iterations", kCount), opt("duration_seconds", kNumber), opt("tokens_used", kCount), opt("artifact_count", kCount),
	},
	events.SubagentConcurrencyWait: {req("task_index", kCount), req("waited_ms", kCount)},
}

// isToolEvent reports whether typ needs tool and iteration ≥ 1.
func isToolEvent(typ events.Type) bool {
	return typ == events.ToolCallStarted || typ == events.ToolCallCompleted || typ == events.ToolCallFailed
}

// isPlanEvent reports whether typ must carry no iteration.
func isPlanEvent(typ events.Type) bool {
	return typ == events.PlanCreated || typ == events.PlanUpdated || typ == events.PlanBlocked
}

func isTerminal(typ events.Type) bool {
	return typ == events.RunCompleted || typ == events.RunFailed
}
