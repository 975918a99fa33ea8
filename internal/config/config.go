// Package config builds odek's effective configuration from layered
// sources and enforces which layer may set what.
//
// Layers, lowest to highest precedence:
//
//  1. built-in defaults;
//  2. the operator file $ODEK_HOME/config.json (trusted; ODEK_HOME defaults
//     to ~/.odek);
//  3. the project file ./odek.json in the project directory (untrusted: it
//     arrives with whatever repository odek is pointed at);
//  4. the environment (ODEK_API_KEY, OPENAI_API_KEY, ODEK_BASE_URL,
//     ODEK_MODEL, ODEK_PROVIDER; every variable odek and odek-bot read is
//     declared once in this package, env.go, environ.go and botenv.go, and
//     listed by `odek config env`);
//  5. command-line flag overrides (Flags).
//
// Trust rules: the project file may not set api_key, base_url or any part of
// dangerous. Such keys are ignored with a Warning, so a repository can never
// send the operator's API key to another host or loosen the danger policy.
// Unknown keys are ignored everywhere, so files may carry sections owned by
// other packages (mcp_servers, limits, subagent, ...); those packages read
// their sections from Config.Layers with Layer.Section and apply their own
// trust rules.
//
// Together with cmd/*, this package is the only place that reads
// configuration files or the process environment. Load does all reading;
// merging and validation are pure functions over the decoded layers.
//
// Concurrency and ownership: Load, HomeDir, DefaultProbe, StarterJSON and
// WriteStarter are safe for concurrent use. A *Config belongs to its caller;
// ResolveEndpoint mutates it and must not race with readers.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Built-in defaults applied by Load.
const (
	// DefaultMaxIterations is used when max_iterations is unset or 0.
	DefaultMaxIterations = 90
	// DefaultMaxToolParallel is used when max_tool_parallel is unset or 0.
	DefaultMaxToolParallel = 4
	// DefaultMaxOutputBytes is used when tools.max_output_bytes is unset or 0.
	DefaultMaxOutputBytes = 64 << 10
	// DefaultStream is the default of llm.stream.
	DefaultStream = true
)

// Limits on configuration input.
const (
	// MaxFileBytes bounds the size of either configuration file; a larger
	// file is an error naming this limit and the observed size.
	MaxFileBytes = 1 << 20
	// MaxSeconds bounds every *_seconds setting (24 hours).
	MaxSeconds = 24 * 60 * 60
)

// File names inside ODEK_HOME and the project directory.
const (
	OperatorFileName = "config.json"
	ProjectFileName  = "odek.json"
)

// Layer names recorded in Config.Sources.
const (
	SourceDefault  = "default"
	SourceOperator = "operator"
	SourceProject  = "project"
	SourceEnv      = "env"
	SourceFlag     = "flag"
	// SourceProbe marks base_url and model chosen by ResolveEndpoint after
	// a local server answered the probe.
	SourceProbe = "probe"
	// SourceProvider marks base_url and model filled from the provider
	// preset (Config.Provider).
	SourceProvider = "provider"
)

// Config is the effective configuration. Load fills every field; the zero
// Config is usable too, each field documenting what its zero value means.
// Config prints (String, GoString) and marshals (MarshalJSON) with the API
// key redacted.
type Config struct {
	// APIKey authenticates against BaseURL. Settable by the operator file and
	// the environment only. "" means no key (fine for loopback servers).
	APIKey string `json:"api_key"`
	// BaseURL is the OpenAI-compatible API root, without a trailing slash
	// (for example "https://api.openai.com/v1"). Settable by the operator
	// file, the environment and flags. "" until ResolveEndpoint picks one.
	BaseURL string `json:"base_url"`
	// Provider names a provider preset (llm.Presets: "deepseek", "gemini",
	// …): it fills BaseURL and Model when they are not set, reads the
	// key from the preset's variable (DEEPSEEK_API_KEY, …), and selects
	// the endpoint's quirks in the llm client. Operator file and
	// environment (ODEK_PROVIDER) only, like base_url. "" means none (the
	// client still recognises known hosts in BaseURL).
	Provider string `json:"provider"`
	// Model is the model id sent with every request. "" until
	// ResolveEndpoint picks a default for the endpoint.
	Model string `json:"model"`
	// MaxIterations caps agent loop iterations; 0 means DefaultMaxIterations.
	MaxIterations int `json:"max_iterations"`
	// MaxToolParallel caps tool calls executed concurrently; 0 means
	// DefaultMaxToolParallel.
	MaxToolParallel int `json:"max_tool_parallel"`
	// SystemPrompt replaces the agent's built-in system prompt; "" means the
	// built-in one.
	SystemPrompt string `json:"system_prompt"`
	// Dangerous is the danger policy; operator file only.
	Dangerous Dangerous `json:"dangerous"`
	// LLM tunes the chat-completions client.
	LLM LLM `json:"llm"`
	// Tools tunes the built-in tools.
	Tools Tools `json:"tools"`
	// Limits are the execution limits and prices (section limits).
	Limits Limits `json:"limits"`
	// Subagent tunes delegate_tasks (section subagent).
	Subagent Subagent `json:"subagent"`
	// Sandbox confines jobs (section sandbox).
	Sandbox Sandbox `json:"sandbox"`
	// Context steers proactive trimming (keys context_window and
	// context_share).
	Context Context `json:"context"`
	// MCPServers are the mcp_servers sections of both files, for package
	// ext. Never marshalled: entries may hold header templates.
	MCPServers MCPServers `json:"-"`

	// Home is the resolved, absolute ODEK_HOME.
	Home string `json:"home"`
	// ProjectDir is the absolute project directory.
	ProjectDir string `json:"project_dir"`
	// Sources maps each setting's dotted JSON key ("llm.stream",
	// "dangerous.classes.install") to the layer that set it: one of the
	// Source* constants. nil on a zero Config.
	Sources map[string]string `json:"sources,omitempty"`
	// Layers holds both files as read, for packages that parse their own
	// sections. Never marshalled: the operator file may hold the API key.
	Layers Layers `json:"-"`
}

// Action is what the danger policy does with a tool call of some class.
type Action string

// Actions. Non-interactive runs accept only ActionAllow and ActionDeny.
const (
	ActionAllow  Action = "allow"
	ActionPrompt Action = "prompt"
	ActionDeny   Action = "deny"
)

// Dangerous is the operator's danger policy ("dangerous" section).
type Dangerous struct {
	// Classes overrides the action per danger class (class names are the
	// tools package's: "local_write", "destructive", "network_egress", ...).
	// A class absent from the map keeps the tools package's built-in action.
	// nil means no overrides.
	Classes map[string]Action `json:"classes,omitempty"`
	// NonInteractive decides calls whose action is "prompt" when nobody can
	// answer (no terminal, no approval channel): ActionAllow or ActionDeny.
	// "" means ActionDeny; Load always sets it.
	NonInteractive Action `json:"non_interactive"`
}

// LLM tunes the chat-completions client ("llm" section).
type LLM struct {
	// Stream requests server-sent events. Load defaults it to true; the zero
	// value (false) means non-streaming requests.
	Stream bool `json:"stream"`
	// MaxAttempts is the number of HTTP attempts per call, retries included;
	// 0 means the llm client's default.
	MaxAttempts int `json:"max_attempts"`
	// IdleTimeoutSeconds aborts a stream silent for this many seconds; 0
	// means the llm client's default.
	IdleTimeoutSeconds int `json:"idle_timeout_seconds"`
	// RequestTimeoutSeconds bounds one whole HTTP attempt; 0 means the llm
	// client's default.
	RequestTimeoutSeconds int `json:"request_timeout_seconds"`
	// StrictToolModels lists the models whose tools are declared in
	// OpenAI's strict mode ("strict": true, schemas adapted). Empty: none.
	StrictToolModels []string `json:"strict_tool_models"`
	// ResponseFormatModels lists the models whose endpoint accepts
	// OpenAI's response_format {"type":"json_schema"}: a run with an
	// output schema (odek run --output-schema, a job's output_schema) sends
	// it to them natively, besides checking the answer. Empty: none.
	ResponseFormatModels []string `json:"response_format_models"`
	// KeepThinkTags leaves a leading <think>…</think> block in the answer;
	// false (the default) moves it out as reasoning.
	KeepThinkTags bool `json:"keep_think_tags"`
}

// IdleTimeout is IdleTimeoutSeconds as a Duration (0 when unset).
func (l LLM) IdleTimeout() time.Duration { return seconds(l.IdleTimeoutSeconds) }

// RequestTimeout is RequestTimeoutSeconds as a Duration (0 when unset).
func (l LLM) RequestTimeout() time.Duration { return seconds(l.RequestTimeoutSeconds) }

// Tools tunes the built-in tools ("tools" section).
type Tools struct {
	// ShellTimeoutSeconds bounds one shell command; 0 means the tools
	// package's default.
	ShellTimeoutSeconds int `json:"shell_timeout_seconds"`
	// MaxOutputBytes clips tool output shown to the model; 0 means
	// DefaultMaxOutputBytes.
	MaxOutputBytes int `json:"max_output_bytes"`
}

// ShellTimeout is ShellTimeoutSeconds as a Duration (0 when unset).
func (t Tools) ShellTimeout() time.Duration { return seconds(t.ShellTimeoutSeconds) }

func seconds(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(min(n, MaxSeconds)) * time.Second
}

// Flags are command-line overrides, the highest layer. "" and 0 mean "not
// given".
type Flags struct {
	Model         string
	BaseURL       string
	MaxIterations int
}

// Options tell Load where to look. The zero Options read the real process
// environment, ODEK_HOME (or ~/.odek) and the working directory.
type Options struct {
	// Home is ODEK_HOME; "" means HomeDir(Environ).
	Home string
	// ProjectDir holds odek.json; "" means the working directory.
	ProjectDir string
	// Environ is the environment as KEY=VALUE pairs; nil means the process
	// environment (read with ReadEnv). An empty non-nil slice is an empty
	// environment.
	Environ []string
	// Flags are command-line overrides.
	Flags Flags
	// NoProject skips the project file: a confined sub-agent works in a
	// chat's directory, where the chat may have written an odek.json.
	NoProject bool
}

// Load reads, validates and merges all layers. Missing files are fine.
// Errors are *Error values naming the file (or variable) and field, and
// wrap ErrSyntax or ErrInvalid; ErrNoHome when no home can be found.
// Warnings report ignored project settings and loose file permissions.
//
// Load does not pick an endpoint: call ResolveEndpoint afterwards.
func Load(opts Options) (*Config, []Warning, error) {
	env, err := readEnv(opts.Environ)
	if err != nil {
		return nil, nil, err
	}
	home := opts.Home
	if home == "" {
		if home, err = HomeDir(opts.Environ); err != nil {
			return nil, nil, err
		}
	}
	if home, err = filepath.Abs(home); err != nil {
		return nil, nil, fmt.Errorf("%w: home %q: %v", ErrNoHome, home, err)
	}
	dir := opts.ProjectDir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, nil, fmt.Errorf("config: project directory: %w", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, nil, fmt.Errorf("config: project directory %q: %w", dir, err)
	}
	op, err := readFile(filepath.Join(home, OperatorFileName))
	if err != nil {
		return nil, nil, err
	}
	var proj fileInput
	if !opts.NoProject {
		if proj, err = readFile(filepath.Join(dir, ProjectFileName)); err != nil {
			return nil, nil, err
		}
	}
	cfg, warns, err := build(op, proj, env, opts.Flags, presetKeys(opts.Environ))
	if err != nil {
		return nil, nil, err
	}
	cfg.Home, cfg.ProjectDir = home, dir
	return cfg, warns, nil
}

// Setting is one effective setting for display (`odek config`).
type Setting struct {
	Key    string // dotted JSON key
	Value  string // printable value; the API key shows as "[redacted]"
	Source string // a Source* constant, or "" when unknown
}

// Settings lists the effective settings in a stable order with the API key
// redacted. Safe to print or log.
func (c *Config) Settings() []Setting {
	src := func(k string) string { return c.Sources[k] }
	key := ""
	if c.APIKey != "" {
		key = redacted
	}
	s := []Setting{
		{"api_key", key, src("api_key")},
		{"base_url", c.BaseURL, src("base_url")},
		{"provider", c.Provider, src("provider")},
		{"model", c.Model, src("model")},
		{"max_iterations", strconv.Itoa(c.MaxIterations), src("max_iterations")},
		{"max_tool_parallel", strconv.Itoa(c.MaxToolParallel), src("max_tool_parallel")},
		{"system_prompt", c.SystemPrompt, src("system_prompt")},
		{"dangerous.non_interactive", string(c.Dangerous.NonInteractive), src("dangerous.non_interactive")},
	}
	classes := make([]string, 0, len(c.Dangerous.Classes))
	for k := range c.Dangerous.Classes {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		f := "dangerous.classes." + k
		s = append(s, Setting{f, string(c.Dangerous.Classes[k]), src(f)})
	}
	s = append(s,
		Setting{"llm.stream", strconv.FormatBool(c.LLM.Stream), src("llm.stream")},
		Setting{"llm.max_attempts", strconv.Itoa(c.LLM.MaxAttempts), src("llm.max_attempts")},
		Setting{"llm.idle_timeout_seconds", strconv.Itoa(c.LLM.IdleTimeoutSeconds), src("llm.idle_timeout_seconds")},
		Setting{"llm.request_timeout_seconds", strconv.Itoa(c.LLM.RequestTimeoutSeconds), src("llm.request_timeout_seconds")},
		Setting{"llm.strict_tool_models", strings.Join(c.LLM.StrictToolModels, ","), src("llm.strict_tool_models")},
		Setting{"llm.response_format_models", strings.Join(c.LLM.ResponseFormatModels, ","), src("llm.response_format_models")},
		Setting{"llm.keep_think_tags", strconv.FormatBool(c.LLM.KeepThinkTags), src("llm.keep_think_tags")},
		Setting{"tools.shell_timeout_seconds", strconv.Itoa(c.Tools.ShellTimeoutSeconds), src("tools.shell_timeout_seconds")},
		Setting{"tools.max_output_bytes", strconv.Itoa(c.Tools.MaxOutputBytes), src("tools.max_output_bytes")},
	)
	for _, sec := range c.sections() {
		v := reflect.ValueOf(sec.dst).Elem()
		for i := range v.NumField() {
			key := jsonName(v.Type().Field(i))
			if sec.key != "" {
				key = sec.key + "." + key
			}
			val := ""
			if f := v.Field(i); !f.IsZero() {
				b, _ := json.Marshal(f.Interface())
				val = string(b)
			}
			s = append(s, Setting{key, val, src(key)})
		}
	}
	for _, m := range []struct {
		sec MCPSection
		src string
	}{{c.MCPServers.Operator, SourceOperator}, {c.MCPServers.Project, SourceProject}} {
		var servers map[string]json.RawMessage
		if json.Unmarshal(m.sec.Raw, &servers) != nil {
			continue
		}
		names := make([]string, 0, len(servers))
		for n := range servers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			// Entries may carry header templates and env values: only the
			// declaring file is shown (odek ext check shows the rest).
			s = append(s, Setting{"mcp_servers." + n, "declared in " + m.sec.Path, m.src})
		}
	}
	s = append(s, Setting{"home", c.Home, ""}, Setting{"project_dir", c.ProjectDir, ""})
	return s
}

const redacted = "[redacted]"

// String renders the settings with the API key redacted, so a Config that
// reaches a log line or an error message never leaks the key.
func (c Config) String() string {
	var b bytes.Buffer
	b.WriteString("config{")
	for i, s := range c.Settings() {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%q", s.Key, s.Value)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so %#v redacts too.
func (c Config) GoString() string { return c.String() }

// MarshalJSON encodes the effective settings with the API key replaced by
// "[redacted]" (empty stays empty). Layers are never encoded.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // drops the methods, so no recursion
	p := plain(c)
	if p.APIKey != "" {
		p.APIKey = redacted
	}
	return json.Marshal(p)
}
