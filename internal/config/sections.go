package config

import "encoding/json"

// The typed sections below are decoded from both files once, in Load,
// validated by their `check` tags and merged by their `project` tags
// (tighten.go): the one rule for what a project file may set. Every
// consumer (host, budget, subagent, sandbox) reads the merged values from
// Config and never parses a file itself.
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

// Subagent is the `subagent` section (delegate_tasks). Zero fields mean
// the defaults of package subagent, which the default tags repeat (a
// host test keeps them equal).
type Subagent struct {
	// MaxConcurrency bounds children running at once per delegate_tasks
	// call (1–8; default 3).
	MaxConcurrency int `json:"max_concurrency" project:"lower" default:"3" check:"min=0,max=8"`
	// MaxProcesses bounds the sub-agent processes, of every depth, running
	// at once under one worker or top-level odek process (1–64; default 8).
	MaxProcesses int `json:"max_processes" project:"lower" default:"8" check:"min=0,max=64"`
	// MaxDepth bounds nesting (1–8; default 2).
	MaxDepth int `json:"max_depth" project:"lower" default:"2" check:"min=0,max=8"`
	// BudgetInherit is "operator" (default) or "share"; a project may
	// only switch to "share".
	BudgetInherit string `json:"budget_inherit" project:"only=share" check:"oneof=|operator|share"`
	// TaskTimeoutSeconds bounds one child's run, in seconds (default 600,
	// at most 86400).
	TaskTimeoutSeconds float64 `json:"task_timeout_seconds" project:"lower" default:"600" check:"min=0,max=86400"`
}

// Sandbox is the `sandbox` section: how worker and bot jobs (and `odek
// run --confine`) are confined. The zero value is the default: mode auto,
// no TCP port reachable for connect or bind, and the sandbox package's
// default resource limits (a limit left at 0 is that default; to lift one,
// set a large value).
type Sandbox struct {
	// Mode is "" (auto: on for worker and bot, off for `odek run` unless
	// Confine), "on" or "off" (operator only).
	Mode string `json:"mode" project:"only=on" check:"oneof=|on|off"`
	// Confine turns the sandbox on for `odek run` and `odek continue`.
	Confine bool `json:"confine" project:"on"`
	// AllowConnectPorts are the TCP ports a job's processes may connect
	// to. Empty ⇒ none.
	AllowConnectPorts []int `json:"allow_connect_ports" project:"subset" check:"min=1,max=65535,maxitems=64"`
	// AllowBindPorts are the TCP ports a job's processes may bind and
	// listen on. Empty ⇒ none, and listen(2) is refused.
	AllowBindPorts []int `json:"allow_bind_ports" project:"subset" check:"min=1,max=65535,maxitems=64"`
	// ReadOnlyPaths are extra absolute paths a job may read and execute.
	ReadOnlyPaths []string `json:"read_only_paths" project:"never" check:"abs,maxitems=64"`
	// DenyPaths are absolute paths never granted.
	DenyPaths []string `json:"deny_paths" project:"append" check:"abs,maxitems=64"`
	// MaxMemoryMB caps each process's address space, in MiB; 0 ⇒ 4096.
	MaxMemoryMB int `json:"max_memory_mb" project:"lower" default:"4096" check:"min=0"`
	// MaxCPUSeconds caps each process's CPU time, in seconds; 0 ⇒ 600.
	MaxCPUSeconds int `json:"max_cpu_seconds" project:"lower" default:"600" check:"min=0"`
	// MaxProcesses caps the processes of odek's user while a job's
	// processes run (per user, not enforced for root); 0 ⇒ 1024.
	MaxProcesses int `json:"max_processes" project:"lower" default:"1024" check:"min=0"`
	// MaxFileSizeMB caps the size of a file a job's process writes, in
	// MiB; 0 ⇒ 1024.
	MaxFileSizeMB int `json:"max_file_size_mb" project:"lower" default:"1024" check:"min=0"`
	// JobMemoryMB caps the memory of a job's processes together, in MiB
	// (its cgroup's memory.max); 0 ⇒ 2048.
	JobMemoryMB int `json:"job_memory_mb" project:"lower" default:"2048" check:"min=0"`
	// JobCPUSeconds caps the CPU time of a job's processes together, in
	// seconds; 0 ⇒ 1800.
	JobCPUSeconds int `json:"job_cpu_seconds" project:"lower" default:"1800" check:"min=0"`
}

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
