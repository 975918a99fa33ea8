package config

import (
	"encoding/json"

	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/subagent"
)

// The typed sections below are decoded from both files once, in Load,
// validated by their `check` tags and merged by their `project` tags
// (tighten.go): the one rule for what a project file may set. Every
// consumer (host, budget, subagent, sandbox) reads the merged values from
// Config and never parses a file itself. Each section is declared once:
// where its consumer can take the file's shape, the consumer's own type
// is the section (Sandbox is sandbox.Settings, Subagent is
// subagent.Settings); otherwise the section converts itself by a method
// (Limits.Budget, Limits.Prices, Dangerous.Policy, Config.LLMConfig in
// convert.go). A new setting is one field.
//
// Tags:
//
//	project:"lower"    a number where 0 means unlimited (or, with
//	                   default:"N", the default N): the project may set one
//	                   where the operator set none, or a lower one. On a
//	                   map, per key.
//	project:"never"    operator file only.
//	project:"on"       a switch the project may only turn on.
//	project:"only=X"   a string the project may only set to X.
//	project:"subset"   a list the project may only remove entries from.
//	project:"append"   a list the project may only add entries to.
//	check:"min=A,max=B,oneof=a|b|,abs,maxitems=N"
//	                   validation of the value (elements of lists and
//	                   values of maps included); NaN and ±Inf are never
//	                   valid.
//
// A project value a rule refuses is ignored with a Warning naming the
// file, the field and the rule; the operator's value stands.

// Limits is the `limits` section: execution limits of a run (0 ⇒
// unlimited) and the prices used to estimate its cost (operator only).
type Limits struct {
	// MaxRuntimeSeconds bounds wall-clock runtime, in seconds (fractions
	// allowed; at most 100 years).
	MaxRuntimeSeconds float64 `json:"max_runtime_seconds" project:"lower" check:"min=0,max=3153600000"`
	// MaxToolCalls bounds tool calls (count).
	MaxToolCalls int `json:"max_tool_calls" project:"lower" check:"min=0"`
	// MaxInputTokens bounds prompt tokens summed over calls.
	MaxInputTokens int `json:"max_input_tokens" project:"lower" check:"min=0"`
	// MaxOutputTokens bounds completion tokens summed over calls.
	MaxOutputTokens int `json:"max_output_tokens" project:"lower" check:"min=0"`
	// MaxCostUSD bounds the estimated cost, in US dollars.
	MaxCostUSD float64 `json:"max_cost_usd" project:"lower" check:"min=0"`
	// InputCostPerMillionUSD is the flat input price, USD per million
	// tokens; nil ⇒ unknown.
	InputCostPerMillionUSD *float64 `json:"input_cost_per_million_usd" project:"never" check:"min=0"`
	// OutputCostPerMillionUSD is the flat output price; nil ⇒ unknown.
	OutputCostPerMillionUSD *float64 `json:"output_cost_per_million_usd" project:"never" check:"min=0"`
	// CachedInputCostPerMillionUSD is the flat price of input tokens the
	// provider's prompt cache served; nil ⇒ the provider preset's
	// documented discount applied to the input price (docs/PROVIDERS.md),
	// else the full input price.
	CachedInputCostPerMillionUSD *float64 `json:"cached_input_cost_per_million_usd" project:"never" check:"min=0"`
	// ModelPrices overrides the flat prices per exact model id.
	ModelPrices map[string]ModelPrice `json:"model_prices" project:"never"`
}

// ModelPrice is one limits.model_prices entry; a nil price falls back to
// the flat one.
type ModelPrice struct {
	InputCostPerMillionUSD  *float64 `json:"input_cost_per_million_usd" check:"min=0"`
	OutputCostPerMillionUSD *float64 `json:"output_cost_per_million_usd" check:"min=0"`
	// CachedInputCostPerMillionUSD is the model's cached-input price; nil
	// ⇒ the flat one, else the preset's discount, else the input price.
	CachedInputCostPerMillionUSD *float64 `json:"cached_input_cost_per_million_usd" check:"min=0"`
}

// Subagent is the `subagent` section (delegate_tasks): the subagent
// package's own Settings, tags included.
type Subagent = subagent.Settings

// Sandbox is the `sandbox` section: how worker and bot jobs (and `odek
// run --confine`) are confined. It is the sandbox package's own Settings,
// tags included, so a new sandbox setting is one field there.
type Sandbox = sandbox.Settings

// Context is the pair of top-level keys that steer proactive trimming.
type Context struct {
	// Window maps a model id to its context window in tokens
	// (context_window); it wins over what the endpoint reports and the
	// built-in table. A model not listed ⇒ the endpoint's report, the
	// table, the provider preset, or llm.DefaultContextWindow, in that
	// order (docs/SESSIONS.md).
	Window map[string]int `json:"context_window" project:"lower" check:"min=0"`
	// Share is the high-water mark: the share of the window a request may
	// fill before the conversation is compacted (context_share,
	// 0 < share ≤ 1); 0 ⇒ the agent's default 0.8.
	Share float64 `json:"context_share" project:"lower" default:"0.8" check:"min=0,max=1"`
	// LowShare is the low-water mark: the share of the window a
	// compaction brings the conversation down to (context_low_share,
	// below Share); 0 ⇒ the agent's default 0.3.
	LowShare float64 `json:"context_low_share" project:"lower" default:"0.3" check:"min=0,max=1"`
	// Compaction is "" or "on" (a digest written by the model replaces the
	// oldest turns) or "off" (the oldest turns are dropped with a note)
	// (context_compaction; a project may only turn it on).
	Compaction string `json:"context_compaction" project:"only=on" check:"oneof=|on|off"`
	// CacheBreakpointModels lists the models whose requests carry explicit
	// prompt-cache breakpoints (cache_control on the system prompt and the
	// last stable message: Anthropic models through OpenRouter or an
	// Anthropic-compatible endpoint). Empty ⇒ none (operator only).
	CacheBreakpointModels []string `json:"cache_breakpoint_models" project:"never" check:"maxitems=64"`
}

// MCPSection is the `mcp_servers` value of one file, kept as JSON: each
// entry is validated on its own by package ext (a broken entry fails only
// its server), and project entries are not tightened but approved.
type MCPSection struct {
	// Path is the declaring file (relative commands resolve against its
	// directory).
	Path string
	// Raw is the JSON value of the key; nil when absent.
	Raw json.RawMessage
}

// MCPServers are both files' mcp_servers sections.
type MCPServers struct {
	Operator, Project MCPSection
}
