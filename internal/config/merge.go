package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"reflect"
	"runtime"
	"sort"
	"strings"
)

// The top-level keys of the file layers decode into pointer fields so
// that "absent" and "zero" differ. The llm, tools and dangerous sections
// decode straight into Config's own section types, over the values the
// layers below left there (Layer.Section): a key the file leaves out
// keeps its value, one it sets (false and 0 included) replaces it. To add
// a setting to one of those sections: a field in its type (config.go),
// its check in validateSections and its default in defaults. A top-level
// key goes to settingsFile when both files may set it or to operatorOnly
// (plus projectRestricted, for the warning) when only the operator may,
// then to validate*, apply* and defaults. The sections that other
// packages consume (limits, subagent, sandbox, context_*, mcp_servers) are
// typed in sections.go and merged by one rule (tighten.go).

// settingsFile holds the keys both files may set.
type settingsFile struct {
	Model           *string `json:"model"`
	MaxIterations   *int    `json:"max_iterations"`
	MaxToolParallel *int    `json:"max_tool_parallel"`
	SystemPrompt    *string `json:"system_prompt"`
}

// operatorOnly holds the keys only config.json may set. A file is decoded
// into settingsFile and into its layer's restricted-keys struct separately
// (embedding would put the Go type name into error field paths).
type operatorOnly struct {
	APIKey   *string `json:"api_key"`
	BaseURL  *string `json:"base_url"`
	Provider *string `json:"provider"`
}

// projectRestricted captures the operator-only keys of odek.json raw, never
// interpreted, only to warn that they were ignored (key matching is the
// same case-insensitive matching the operator file gets).
type projectRestricted struct {
	APIKey    json.RawMessage `json:"api_key"`
	BaseURL   json.RawMessage `json:"base_url"`
	Provider  json.RawMessage `json:"provider"`
	Dangerous json.RawMessage `json:"dangerous"`
}

// OpenAIBaseURL is used when an API key is set and no base URL is.
const OpenAIBaseURL = "https://api.openai.com/v1"

// build is Load without I/O: it decodes, validates and merges the layers.
//
// keys holds the values of the provider presets' key variables
// (presetKeys), nil for none.
func build(op, proj fileInput, env envVars, flags Flags, keys map[string]string) (*Config, []Warning, error) {
	cfg := defaults()
	var warns []Warning

	if op.data != nil {
		var s settingsFile
		var f operatorOnly
		raw, err := parseObject(op.path, op.data, &s, &f)
		if err != nil {
			return nil, nil, err
		}
		if err := validateSettings(&s, op.path); err != nil {
			return nil, nil, err
		}
		if err := validateOperator(&f, op.path); err != nil {
			return nil, nil, err
		}
		cfg.Layers.Operator = Layer{Path: op.path, Raw: raw}
		applySettings(cfg, &s, SourceOperator)
		if err := applySections(cfg, cfg.Layers.Operator, SourceOperator); err != nil {
			return nil, nil, err
		}
		setString(cfg, &cfg.APIKey, f.APIKey, "api_key", SourceOperator)
		if f.BaseURL != nil && *f.BaseURL != "" {
			cfg.BaseURL = normalizeURL(*f.BaseURL)
			cfg.Sources["base_url"] = SourceOperator
		}
		if f.Provider != nil && *f.Provider != "" {
			cfg.Provider = *f.Provider
			cfg.Sources["provider"] = SourceOperator
		}
		if f.APIKey != nil && *f.APIKey != "" {
			warns = append(warns, permWarning(op)...)
		}
	} else {
		cfg.Layers.Operator = Layer{Path: op.path}
	}

	if proj.data != nil {
		var s settingsFile
		var f projectRestricted
		raw, err := parseObject(proj.path, proj.data, &s, &f)
		if err != nil {
			return nil, nil, err
		}
		if err := validateSettings(&s, proj.path); err != nil {
			return nil, nil, err
		}
		cfg.Layers.Project = Layer{Path: proj.path, Raw: raw}
		applySettings(cfg, &s, SourceProject)
		if err := applySections(cfg, cfg.Layers.Project, SourceProject); err != nil {
			return nil, nil, err
		}
		keyWhy := "a project must not supply credentials; remove it from this file and set ODEK_API_KEY or api_key in " + op.path
		if runtime.GOOS != "windows" && proj.mode&0o077 != 0 {
			keyWhy += fmt.Sprintf(" (this file is also readable by group or others: mode %04o)", uint32(proj.mode))
		}
		for _, k := range []struct {
			field, why string
			raw        json.RawMessage
		}{
			{"api_key", keyWhy, f.APIKey},
			{"base_url", "a project must not redirect the API key to another host; set ODEK_BASE_URL or base_url in " + op.path, f.BaseURL},
			{"provider", "a project must not redirect the API key to another provider; set ODEK_PROVIDER or provider in " + op.path, f.Provider},
			{"dangerous", "a project must not change the danger policy; set dangerous in " + op.path, f.Dangerous},
		} {
			if k.raw != nil && string(k.raw) != "null" {
				warns = append(warns, Warning{Source: proj.path, Field: k.field, Message: "ignored: " + k.why})
			}
		}
	} else {
		cfg.Layers.Project = Layer{Path: proj.path}
	}

	sw, err := buildSections(cfg)
	if err != nil {
		return nil, nil, err
	}
	warns = append(warns, sw...)

	if err := applyEnv(cfg, env, keys); err != nil {
		return nil, nil, err
	}
	if err := applyFlags(cfg, flags); err != nil {
		return nil, nil, err
	}
	if err := applyProvider(cfg); err != nil {
		return nil, nil, err
	}
	finish(cfg)
	where := map[string]string{SourceOperator: op.path, SourceEnv: "environment", SourceFlag: "flags"}
	warns = append(warns, transportWarnings(cfg, where[cfg.Sources["base_url"]])...)
	return cfg, warns, nil
}

// defaults is layer 1. Every known key gets a Sources entry.
func defaults() *Config {
	c := &Config{
		MaxIterations:   DefaultMaxIterations,
		MaxToolParallel: DefaultMaxToolParallel,
		Dangerous:       Dangerous{NonInteractive: ActionDeny},
		LLM:             LLM{Stream: DefaultStream},
		Tools:           Tools{MaxOutputBytes: DefaultMaxOutputBytes},
		Sources:         map[string]string{},
	}
	for _, k := range []string{
		"api_key", "base_url", "model", "max_iterations", "max_tool_parallel", "system_prompt",
		"dangerous.non_interactive", "llm.stream", "llm.max_attempts", "llm.idle_timeout_seconds",
		"llm.request_timeout_seconds", "tools.shell_timeout_seconds", "tools.max_output_bytes",
		"provider", "llm.strict_tool_models", "llm.response_format_models", "llm.keep_think_tags",
	} {
		c.Sources[k] = SourceDefault
	}
	return c
}

// finish maps explicit zeros back to the documented defaults.
func finish(c *Config) {
	if c.MaxIterations == 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.MaxToolParallel == 0 {
		c.MaxToolParallel = DefaultMaxToolParallel
	}
	if c.Tools.MaxOutputBytes == 0 {
		c.Tools.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.Dangerous.NonInteractive == "" {
		c.Dangerous.NonInteractive = ActionDeny
	}
	if len(c.LLM.StrictToolModels) == 0 {
		c.LLM.StrictToolModels = nil
	}
	if len(c.LLM.ResponseFormatModels) == 0 {
		c.LLM.ResponseFormatModels = nil
	}
	if len(c.Dangerous.Classes) == 0 {
		c.Dangerous.Classes = nil
	}
}

func setString(c *Config, dst *string, v *string, key, src string) {
	if v != nil && *v != "" {
		*dst = *v
		c.Sources[key] = src
	}
}

func set[T any](c *Config, dst *T, v *T, key, src string) {
	if v != nil {
		*dst = *v
		c.Sources[key] = src
	}
}

func applySettings(c *Config, s *settingsFile, src string) {
	setString(c, &c.Model, s.Model, "model", src)
	set(c, &c.MaxIterations, s.MaxIterations, "max_iterations", src)
	set(c, &c.MaxToolParallel, s.MaxToolParallel, "max_tool_parallel", src)
	setString(c, &c.SystemPrompt, s.SystemPrompt, "system_prompt", src)
}

// layerSection is one section that applySections decodes over Config.
type layerSection struct {
	key string
	dst any // pointer to the Config field
}

// applySections decodes the llm and tools sections of l (and, from the
// operator file, dangerous) over c's current values, checks them and
// records the keys l sets as coming from src. A key set to null is
// absent: it keeps its value (encoding/json would clear a list or map).
// A project file's dangerous section is never read (projectRestricted
// warns about it).
func applySections(c *Config, l Layer, src string) error {
	secs := []layerSection{{"llm", &c.LLM}, {"tools", &c.Tools}}
	if src == SourceOperator {
		secs = append(secs, layerSection{"dangerous", &c.Dangerous})
	}
	for _, sec := range secs {
		dst := reflect.ValueOf(sec.dst).Elem()
		before := reflect.New(dst.Type()).Elem()
		before.Set(dst)
		present, err := l.Section(sec.key, sec.dst)
		if err != nil {
			return err
		}
		if !present {
			continue
		}
		set, null, err := sectionKeys(l, sec.key, dst.Type())
		if err != nil {
			return err
		}
		for _, i := range null {
			dst.Field(i).Set(before.Field(i))
		}
		// The layers below were checked: a bad value is this file's.
		if err := validateSections(c, l.Path); err != nil {
			return err
		}
		for _, i := range set {
			name := jsonName(dst.Type().Field(i))
			if sec.key == "dangerous" && name == "classes" {
				for class := range c.Dangerous.Classes {
					c.Sources["dangerous.classes."+class] = src
				}
				continue
			}
			c.Sources[sec.key+"."+name] = src
		}
	}
	return nil
}

// sectionKeys reports which fields of t (by index) section key of l sets
// to a value and which to null. Keys match case-insensitively and the
// last match wins, as in decoding.
func sectionKeys(l Layer, key string, t reflect.Type) (set, null []int, err error) {
	var raw json.RawMessage
	if _, err := l.Section(key, &raw); err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, nil, err
	}
	last := map[int]bool{} // field → set to null
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		name, _ := tok.(string)
		for i := range t.NumField() {
			if strings.EqualFold(jsonName(t.Field(i)), name) {
				last[i] = string(v) == "null"
			}
		}
	}
	for i := range t.NumField() {
		if isNull, ok := last[i]; ok && isNull {
			null = append(null, i)
		} else if ok {
			set = append(set, i)
		}
	}
	return set, null, nil
}

func applyEnv(c *Config, e envVars, keys map[string]string) error {
	if e.Provider != "" {
		c.Provider = e.Provider
		c.Sources["provider"] = SourceEnv
	}
	presetKey := keys[presetKeyEnv(c.Provider)]
	switch {
	case e.APIKey != "":
		c.APIKey = e.APIKey
		c.Sources["api_key"] = SourceEnv
	case presetKey != "":
		c.APIKey = presetKey
		c.Sources["api_key"] = SourceEnv
	case e.OpenAIAPIKey != "" && openAIKeyApplies(c.Provider):
		c.APIKey = e.OpenAIAPIKey
		c.Sources["api_key"] = SourceEnv
	}
	if e.BaseURL != "" {
		if reason := checkBaseURL(e.BaseURL); reason != "" {
			return invalidf("environment variable ODEK_BASE_URL", "base_url", "%s", reason)
		}
		c.BaseURL = normalizeURL(e.BaseURL)
		c.Sources["base_url"] = SourceEnv
	}
	if e.Model != "" {
		c.Model = e.Model
		c.Sources["model"] = SourceEnv
	}
	return nil
}

func applyFlags(c *Config, f Flags) error {
	if f.MaxIterations < 0 {
		return invalidf("flags", "max_iterations", "must be >= 0, got %d", f.MaxIterations)
	}
	if f.BaseURL != "" {
		if reason := checkBaseURL(f.BaseURL); reason != "" {
			return invalidf("flags", "base_url", "%s", reason)
		}
		c.BaseURL = normalizeURL(f.BaseURL)
		c.Sources["base_url"] = SourceFlag
	}
	if f.Model != "" {
		c.Model = f.Model
		c.Sources["model"] = SourceFlag
	}
	if f.MaxIterations > 0 {
		c.MaxIterations = f.MaxIterations
		c.Sources["max_iterations"] = SourceFlag
	}
	return nil
}

// validateSettings checks the top-level keys shared by both files.
func validateSettings(s *settingsFile, path string) error {
	for _, n := range []struct {
		key string
		v   *int
	}{{"max_iterations", s.MaxIterations}, {"max_tool_parallel", s.MaxToolParallel}} {
		if n.v != nil && *n.v < 0 {
			return invalidf(path, n.key, "must be >= 0, got %d", *n.v)
		}
	}
	return nil
}

// validateSections checks the llm, tools and dangerous sections as merged
// so far; path names the file that set the last of them.
func validateSections(c *Config, path string) error {
	for _, n := range []struct {
		key string
		v   int
		max int // 0: no upper bound
	}{
		{"llm.max_attempts", c.LLM.MaxAttempts, 0},
		{"llm.idle_timeout_seconds", c.LLM.IdleTimeoutSeconds, MaxSeconds},
		{"llm.request_timeout_seconds", c.LLM.RequestTimeoutSeconds, MaxSeconds},
		{"tools.shell_timeout_seconds", c.Tools.ShellTimeoutSeconds, MaxSeconds},
		{"tools.max_output_bytes", c.Tools.MaxOutputBytes, 0},
	} {
		switch {
		case n.v < 0:
			return invalidf(path, n.key, "must be >= 0, got %d", n.v)
		case n.max > 0 && n.v > n.max:
			return invalidf(path, n.key, "got %d, exceeding the limit MaxSeconds=%d", n.v, n.max)
		}
	}
	d := c.Dangerous
	classes := make([]string, 0, len(d.Classes))
	for k := range d.Classes {
		classes = append(classes, k)
	}
	sort.Strings(classes) // report the first bad class deterministically
	for _, k := range classes {
		field := "dangerous.classes." + k
		if !validClassName(k) {
			return invalidf(path, field, "class name must be 1-64 characters of a-z, 0-9 and _, starting with a letter")
		}
		switch d.Classes[k] {
		case ActionAllow, ActionPrompt, ActionDeny:
		default:
			return invalidf(path, field, "invalid action %q: want \"allow\", \"prompt\" or \"deny\"", clip(string(d.Classes[k])))
		}
	}
	// defaults sets deny: "" here is the file's.
	switch d.NonInteractive {
	case ActionAllow, ActionDeny:
	default:
		return invalidf(path, "dangerous.non_interactive", "invalid action %q: want \"deny\" or \"allow\"", clip(string(d.NonInteractive)))
	}
	return nil
}

// validateOperator checks the operator-only top-level keys of config.json.
func validateOperator(f *operatorOnly, path string) error {
	if f.BaseURL != nil && *f.BaseURL != "" {
		if reason := checkBaseURL(*f.BaseURL); reason != "" {
			return invalidf(path, "base_url", "%s", reason)
		}
	}
	return nil
}

func validClassName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// clip bounds a value quoted in an error message.
func clip(s string) string {
	const n = 32
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkBaseURL returns "" for an acceptable base URL, else the reason. The
// reason never repeats the URL: it may carry credentials.
func checkBaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "not a valid URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "must be an absolute http:// or https:// URL"
	}
	if u.Hostname() == "" {
		return "must name a host"
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "must not have a query or fragment"
	}
	return ""
}

func normalizeURL(s string) string { return strings.TrimRight(s, "/") }

// isLoopback reports whether the base URL's host is a loopback address:
// 127.0.0.0/8, ::1 (also IPv4-mapped) or the name "localhost".
func isLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// permWarning flags a file holding an API key that others can read.
func permWarning(in fileInput) []Warning {
	if runtime.GOOS == "windows" || in.mode&0o077 == 0 {
		return nil
	}
	return []Warning{{Source: in.path, Field: "api_key", Message: fmt.Sprintf(
		"file contains an API key and is readable by group or others (mode %04o); run: chmod 600 %s", uint32(in.mode), in.path)}}
}

// transportWarnings flags a key that would travel unencrypted.
func transportWarnings(c *Config, source string) []Warning {
	if c.APIKey == "" || c.BaseURL == "" || isLoopback(c.BaseURL) {
		return nil
	}
	if u, err := url.Parse(c.BaseURL); err == nil && u.Scheme == "http" {
		return []Warning{{Source: source, Field: "base_url",
			Message: "plain http:// to a non-loopback host: the API key would travel unencrypted; use https://"}}
	}
	return nil
}
