package ext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient"
)

// SectionKey is the top-level key of both configuration files that
// declares extension servers.
const SectionKey = "mcp_servers"

// Defaults and caps of the server entries that odek-extension/v1 leaves
// to the host.
const (
	// MaxStartupTimeout caps startup_timeout_seconds (clamped with a
	// warning).
	MaxStartupTimeout = time.Hour
	// MaxServers is the most entries one mcp_servers section may hold;
	// a larger section is an ErrConfig error.
	MaxServers = 64
	// MaxArgs, MaxEnv and MaxRoots bound the lists of one entry.
	MaxArgs  = 1024
	MaxEnv   = 256
	MaxRoots = 64
	// DefaultDangerClass is the danger class of MCP tool calls unless the
	// operator file sets danger_class for the server. The default policy
	// allows it: the per-tool approval is the consent to run the tool (the
	// contract: "MCP tool calls run once their tool is approved"), and an
	// operator who wants every call confirmed sets danger_class to
	// network_egress (prompted by the default policy).
	DefaultDangerClass = tools.ClassLocalWrite
)

// Scopes of a server (scope).
const (
	// ScopeShared (the default): a worker starts the server once and all
	// its jobs share it, unconfined, in the worker's directory.
	ScopeShared = "shared"
	// ScopeJob: the server is started for each job and stopped at its
	// end, with the job's root as its working directory, under the job's
	// sandbox when the job is confined.
	ScopeJob = "job"
)

// Source says which file declared a server.
type Source string

// Sources.
const (
	// SourceOperator is $ODEK_HOME/config.json: trusted, no spawn approval.
	SourceOperator Source = "operator"
	// SourceProject is ./odek.json: untrusted, spawn needs approval.
	SourceProject Source = "project"
)

// Section is one mcp_servers section as found in a file.
type Section struct {
	// Path is the declaring file; relative commands and artifact roots are
	// resolved against its directory. "" ⇒ relative paths are errors.
	Path string
	// Raw is the JSON value of the mcp_servers key; nil or "null" ⇒ none.
	Raw json.RawMessage
}

// Sections extracts the raw mcp_servers sections of both layers. A
// section that is present but not a JSON object is reported later by
// ParseConfig; a file that does not parse is a config.Layer error.
func Sections(l config.Layers) (operator, project Section, err error) {
	operator.Path, project.Path = l.Operator.Path, l.Project.Path
	if _, err = l.Operator.Section(SectionKey, &operator.Raw); err != nil {
		return operator, project, err
	}
	if _, err = l.Project.Section(SectionKey, &project.Raw); err != nil {
		return operator, project, err
	}
	return operator, project, nil
}

// ServerSpec is one server entry after defaults and clamps. Durations,
// byte and character counts are the effective values (never zero for a
// spec without Err).
type ServerSpec struct {
	// Name is the key under mcp_servers.
	Name   string
	Source Source
	// File is the declaring file.
	File string
	// Command is the executable; a relative path with a slash has been
	// made absolute against File's directory, a bare name is looked up in
	// PATH at spawn.
	Command string
	Args    []string
	// Env is the configured environment (values never logged or shown).
	Env map[string]string
	// Timeout is the per-request timeout (timeout_seconds; default 30s,
	// clamped to 1h).
	Timeout time.Duration
	// MaxResponseBytes bounds one JSON-RPC line, in bytes (default
	// 10 MiB, ceiling 64 MiB).
	MaxResponseBytes int64
	// MaxResultChars bounds the text the model sees, in code points
	// (default 200000, clamped to 1000000).
	MaxResultChars int
	// StartupTimeout bounds spawn + initialize + tools/list
	// (startup_timeout_seconds; default 10s, clamped to 1h).
	StartupTimeout time.Duration
	// ArtifactRoots are absolute, cleaned directories; empty ⇒ every
	// artifact ref is rejected.
	ArtifactRoots []string
	// Enabled is false when the entry says "enabled": false.
	Enabled bool
	// Required makes a failure to load the server fail Load.
	Required bool
	// AutoApprove (operator file only) approves every tool of the server.
	AutoApprove bool
	// DangerClass is the class every call of the server's tools is
	// assessed with (danger_class, operator file only; default
	// DefaultDangerClass).
	DangerClass tools.Class
	// Scope is ScopeShared or ScopeJob (scope; default ScopeShared).
	Scope string
	// Warnings name clamped values, stripped fields and stripped env keys.
	Warnings []string
	// Err is set when the entry is unusable; the server is not started.
	Err error
}

// rawServer is the wire form of one entry. Pointers tell absent from
// zero; unknown fields are ignored (the additive rule).
type rawServer struct {
	Command               *string           `json:"command"`
	Args                  []string          `json:"args"`
	Env                   map[string]string `json:"env"`
	TimeoutSeconds        *int64            `json:"timeout_seconds"`
	MaxResponseBytes      *int64            `json:"max_response_bytes"`
	MaxResultChars        *int64            `json:"max_result_chars"`
	ArtifactRoots         []string          `json:"artifact_roots"`
	Enabled               *bool             `json:"enabled"`
	AutoApprove           *bool             `json:"auto_approve"`
	Required              *bool             `json:"required"`
	StartupTimeoutSeconds *int64            `json:"startup_timeout_seconds"`
	DangerClass           *string           `json:"danger_class"`
	Scope                 *string           `json:"scope"`
}

// ParseConfig parses both sections into specs sorted by name. It is a pure
// function. The error is for a section as a whole (not a JSON object, too
// many entries) and wraps ErrConfig; problems of one entry are in that
// spec's Err, so one bad entry does not hide the others. A name declared in
// both files keeps the operator's entry (a project cannot redefine an
// operator server) and warns. Warnings not tied to one entry are returned.
func ParseConfig(operator, project Section) ([]ServerSpec, []string, error) {
	op, err := parseSection(SourceOperator, operator)
	if err != nil {
		return nil, nil, err
	}
	pr, err := parseSection(SourceProject, project)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	byName := make(map[string]bool, len(op))
	specs := make([]ServerSpec, 0, len(op)+len(pr))
	for _, s := range op {
		byName[s.Name] = true
		specs = append(specs, s)
	}
	for _, s := range pr {
		if byName[s.Name] {
			warnings = append(warnings, fmt.Sprintf("MCP server %q is declared in both %s and %s; the project entry is ignored", s.Name, displayPath(operator.Path), displayPath(project.Path)))
			continue
		}
		specs = append(specs, s)
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs, warnings, nil
}

func displayPath(p string) string {
	if p == "" {
		return "(unnamed file)"
	}
	return p
}

func parseSection(src Source, sec Section) ([]ServerSpec, error) {
	raw := bytes.TrimSpace(sec.Raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("%w: %s: %s must be a JSON object of server name → entry: %s", ErrConfig, displayPath(sec.Path), SectionKey, jsonProblem(err))
	}
	if len(entries) > MaxServers {
		return nil, fmt.Errorf("%w: %s: %s has %d entries, limit %d", ErrConfig, displayPath(sec.Path), SectionKey, len(entries), MaxServers)
	}
	specs := make([]ServerSpec, 0, len(entries))
	for name, e := range entries {
		specs = append(specs, parseServer(src, sec.Path, name, e))
	}
	return specs, nil
}

// jsonProblem describes a decoding error without quoting any value (a
// value may be a secret).
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got, _, _ := strings.Cut(te.Value, " ")
		if te.Field != "" {
			return fmt.Sprintf("field %q: got a JSON %s, want %s", te.Field, got, config.JSONKind(te.Type))
		}
		return fmt.Sprintf("got a JSON %s, want %s", got, config.JSONKind(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at offset %d", se.Offset)
	}
	return "does not decode"
}

// parseServer builds one spec. It never fails: problems go to Err.
func parseServer(src Source, file, name string, raw json.RawMessage) ServerSpec {
	s := ServerSpec{
		Name:             name,
		Source:           src,
		File:             file,
		Enabled:          true,
		Timeout:          mcpclient.DefaultTimeout,
		MaxResponseBytes: mcpclient.DefaultMaxResponseBytes,
		MaxResultChars:   mcpclient.DefaultMaxResultChars,
		StartupTimeout:   mcpclient.DefaultStartupTimeout,
		DangerClass:      DefaultDangerClass,
		Scope:            ScopeShared,
	}
	fail := func(format string, a ...any) ServerSpec {
		s.Err = fmt.Errorf("%w: server %q in %s: %s", ErrConfig, clipName(name), displayPath(file), fmt.Sprintf(format, a...))
		return s
	}
	var r rawServer
	if err := json.Unmarshal(raw, &r); err != nil {
		// Keep "required" when it can be read on its own, so a broken
		// required entry still fails the run.
		var req struct {
			Required bool `json:"required"`
		}
		if json.Unmarshal(raw, &req) == nil {
			s.Required = req.Required
		}
		return fail("%s", jsonProblem(err))
	}
	if r.Required != nil {
		s.Required = *r.Required
	}
	if r.Enabled != nil {
		s.Enabled = *r.Enabled
	}
	if err := mcpclient.ValidateName(name); err != nil {
		return fail("server name: %v", err)
	}
	if r.Scope != nil {
		switch *r.Scope {
		case ScopeShared, ScopeJob:
			s.Scope = *r.Scope
		default:
			return fail("scope %q: want %q or %q", clipName(*r.Scope), ScopeShared, ScopeJob)
		}
	}
	warn := func(format string, a ...any) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("MCP server %q: ", name)+fmt.Sprintf(format, a...))
	}

	// Trust: what only the operator may set.
	if src == SourceProject {
		if r.AutoApprove != nil && *r.AutoApprove {
			warn("auto_approve is ignored in the project file %s (operator config only)", displayPath(file))
		}
		if r.DangerClass != nil {
			warn("danger_class is ignored in the project file %s (operator config only)", displayPath(file))
		}
	} else {
		if r.AutoApprove != nil {
			s.AutoApprove = *r.AutoApprove
		}
		if r.DangerClass != nil {
			c := tools.Class(*r.DangerClass)
			if !knownClass(c) {
				return fail("danger_class=%q is not a danger class (want one of %s)", clipName(*r.DangerClass), classList())
			}
			s.DangerClass = c
		}
	}

	if r.Command == nil || strings.TrimSpace(*r.Command) == "" {
		return fail("command is required")
	}
	cmd, err := resolvePath(file, *r.Command, true)
	if err != nil {
		return fail("command: %v", err)
	}
	s.Command = cmd
	if len(r.Args) > MaxArgs {
		return fail("args has %d entries, limit %d", len(r.Args), MaxArgs)
	}
	s.Args = append([]string(nil), r.Args...)
	for i, a := range s.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fail("args[%d] contains a NUL byte", i)
		}
	}
	if len(r.Env) > MaxEnv {
		return fail("env has %d entries, limit %d", len(r.Env), MaxEnv)
	}
	if len(r.Env) > 0 {
		s.Env = make(map[string]string, len(r.Env))
		for k, v := range r.Env {
			s.Env[k] = v
		}
	}

	secs := func(field string, v *int64, def, max time.Duration) (time.Duration, bool) {
		switch {
		case v == nil || *v == 0:
			return def, true
		case *v < 0:
			fail("%s=%d is negative", field, *v)
			return 0, false
		case *v > int64(max/time.Second):
			warn("%s=%d clamped to %d", field, *v, int64(max/time.Second))
			return max, true
		}
		return time.Duration(*v) * time.Second, true
	}
	var ok bool
	if s.Timeout, ok = secs("timeout_seconds", r.TimeoutSeconds, mcpclient.DefaultTimeout, mcpclient.MaxTimeout); !ok {
		return s
	}
	if s.StartupTimeout, ok = secs("startup_timeout_seconds", r.StartupTimeoutSeconds, mcpclient.DefaultStartupTimeout, MaxStartupTimeout); !ok {
		return s
	}
	if v := r.MaxResponseBytes; v != nil && *v != 0 {
		switch {
		case *v < 0:
			return fail("max_response_bytes=%d is negative", *v)
		case *v > mcpclient.MaxResponseBytesCeiling:
			return fail("max_response_bytes=%d exceeds the ceiling of %d (64 MiB); the server is not started", *v, mcpclient.MaxResponseBytesCeiling)
		}
		s.MaxResponseBytes = *v
	}
	if v := r.MaxResultChars; v != nil && *v != 0 {
		switch {
		case *v < 0:
			return fail("max_result_chars=%d is negative", *v)
		case *v > mcpclient.MaxResultCharsCeiling:
			warn("max_result_chars=%d clamped to %d", *v, mcpclient.MaxResultCharsCeiling)
			s.MaxResultChars = mcpclient.MaxResultCharsCeiling
		default:
			s.MaxResultChars = int(*v)
		}
	}
	if len(r.ArtifactRoots) > MaxRoots {
		return fail("artifact_roots has %d entries, limit %d", len(r.ArtifactRoots), MaxRoots)
	}
	for i, root := range r.ArtifactRoots {
		p, err := resolvePath(file, root, false)
		if err != nil {
			return fail("artifact_roots[%d]: %v", i, err)
		}
		s.ArtifactRoots = append(s.ArtifactRoots, p)
	}
	return s
}

// resolvePath makes p absolute against the directory of file. A bare
// command name (no slash) stays as it is, for a PATH lookup at spawn.
func resolvePath(file, p string, command bool) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("contains a NUL byte")
	}
	if p == "" {
		return "", errors.New("is empty")
	}
	if command && !strings.Contains(p, "/") {
		return p, nil
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	if file == "" {
		return "", fmt.Errorf("relative path %q needs a declaring file to resolve against", clipName(p))
	}
	return filepath.Join(filepath.Dir(file), p), nil
}

// clipName bounds a file-supplied name for messages.
func clipName(s string) string {
	const max = 80
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

var allClasses = []tools.Class{
	tools.ClassSafe, tools.ClassLocalWrite, tools.ClassSystemWrite, tools.ClassDestructive,
	tools.ClassCodeExecution, tools.ClassNetworkEgress, tools.ClassInstall, tools.ClassUnknown, tools.ClassBlocked,
}

func knownClass(c tools.Class) bool {
	for _, k := range allClasses {
		if c == k {
			return true
		}
	}
	return false
}

func classList() string {
	s := make([]string, len(allClasses))
	for i, c := range allClasses {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// IsSecretEnvName is the secret test applied to every environment name a
// server would get: redact.IsSecretName or mcpclient.LooksSecret.
func IsSecretEnvName(name string) bool {
	return redact.IsSecretName(name) || mcpclient.LooksSecret(name)
}

// ClientConfig builds the mcpclient config of s: the minimal environment
// from base (odek's environment) plus s.Env with every secret-looking name
// stripped (IsSecretEnvName), and the effective limits. warnings name each
// stripped configured key — never a value. dir is the server's working
// directory ("" ⇒ odek's).
func (s *ServerSpec) ClientConfig(base []string, dir string) (cfg mcpclient.ServerConfig, warnings []string) {
	env, stripped := mcpclient.FilterEnv(base, s.Env, IsSecretEnvName)
	for _, k := range stripped {
		if _, configured := s.Env[k]; configured {
			warnings = append(warnings, fmt.Sprintf("MCP server %q: env key %q looks like a secret or is not a valid name; it is not passed to the server", s.Name, clipName(k)))
		}
	}
	return mcpclient.ServerConfig{
		Name:             s.Name,
		Command:          s.Command,
		Args:             append([]string(nil), s.Args...),
		Env:              env,
		Dir:              dir,
		Timeout:          s.Timeout,
		MaxResponseBytes: s.MaxResponseBytes,
		MaxResultChars:   s.MaxResultChars,
		ArtifactRoots:    append([]string(nil), s.ArtifactRoots...),
		StartupTimeout:   s.StartupTimeout,
	}, warnings
}

// passedEnv is the configured environment that actually reaches the
// server: s.Env without stripped names. Sorted "KEY=value".
func (s *ServerSpec) passedEnv() []string {
	env, _ := mcpclient.FilterEnv(nil, s.Env, IsSecretEnvName)
	return env
}
