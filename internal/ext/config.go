package ext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcpauth"
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

// Section is one file's mcp_servers section as config.Load found it:
// Path is the declaring file (relative commands and artifact roots are
// resolved against its directory; "" ⇒ relative paths are errors), Raw
// the JSON value of the key (nil or "null" ⇒ none). A section that is
// not a JSON object is reported by ParseConfig.
type Section = config.MCPSection

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
	// PATH at spawn. Empty for a remote server (URL).
	Command string
	// URL is a remote server's Streamable HTTP endpoint (instead of
	// Command).
	URL string
	// Headers are the configured HTTP headers as written (values may hold
	// ${NAME} references, operator file only; never logged or shown).
	Headers map[string]string
	// AllowInsecureHTTP (operator file only) permits http:// to a host that
	// is not loopback.
	AllowInsecureHTTP bool
	// OAuth is the oauth object (operator file only; nil ⇒ absent).
	OAuth *OAuthSpec
	// ProtocolVersion is the MCP version sent in initialize ("" ⇒
	// mcpclient.ProtocolVersion).
	ProtocolVersion string
	Args            []string
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
	URL                   *string           `json:"url"`
	Headers               map[string]string `json:"headers"`
	AllowInsecureHTTP     *bool             `json:"allow_insecure_http"`
	ProtocolVersion       *string           `json:"protocol_version"`
	OAuth                 *rawOAuth         `json:"oauth"`
}

// rawOAuth is the oauth object of a url server (operator file only).
type rawOAuth struct {
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes"`
}

// OAuthSpec is a url server's OAuth settings (the oauth object; operator
// file only). Without it a url server still uses a stored login (odek mcp
// login) when there is one.
type OAuthSpec struct {
	// ClientID is a client the operator registered at the authorization
	// server ("" ⇒ dynamic client registration at login).
	ClientID string
	// ClientSecret may hold ${NAME} references (resolved at login).
	ClientSecret string
	// Scopes override the discovered scopes at login.
	Scopes []string
}

// MaxHeaders bounds the headers of one entry.
const MaxHeaders = 64

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

	if r.ProtocolVersion != nil && *r.ProtocolVersion != "" {
		if err := mcpclient.CheckProtocolVersion(name, *r.ProtocolVersion); err != nil {
			return fail("protocol_version=%q is not supported (want one of %s)", clipName(*r.ProtocolVersion), strings.Join(mcpclient.SupportedProtocolVersions, ", "))
		}
		s.ProtocolVersion = *r.ProtocolVersion
	}
	if r.AllowInsecureHTTP != nil && *r.AllowInsecureHTTP {
		if src == SourceProject {
			warn("allow_insecure_http is ignored in the project file %s (operator config only)", displayPath(file))
		} else {
			s.AllowInsecureHTTP = true
		}
	}
	hasCommand := r.Command != nil && strings.TrimSpace(*r.Command) != ""
	hasURL := r.URL != nil && strings.TrimSpace(*r.URL) != ""
	switch {
	case hasCommand && hasURL:
		return fail("command and url are both set; a server is either a command (stdio) or a url (Streamable HTTP)")
	case hasURL:
		s.URL = strings.TrimSpace(*r.URL)
		if err := checkServerURL(s.URL, s.AllowInsecureHTTP); err != nil {
			return fail("url %s: %v", displayURL(s.URL), err)
		}
		if len(r.Headers) > MaxHeaders {
			return fail("headers has %d entries, limit %d", len(r.Headers), MaxHeaders)
		}
		for k, v := range r.Headers {
			if src == SourceProject && strings.Contains(v, "${") {
				return fail("headers[%q]: ${…} references are resolved in the operator file only (a project file must not send odek's environment to a server it names)", clipName(k))
			}
			if err := checkHeaderTemplate(v); err != nil {
				return fail("headers[%q]: %v", clipName(k), err)
			}
		}
		if len(r.Headers) > 0 {
			s.Headers = make(map[string]string, len(r.Headers))
			for k, v := range r.Headers {
				s.Headers[k] = v
			}
		}
		if r.OAuth != nil {
			if src == SourceProject {
				warn("oauth is ignored in the project file %s (operator config only: a project file never gets the operator's tokens)", displayPath(file))
			} else {
				if err := checkHeaderTemplate(r.OAuth.ClientSecret); err != nil {
					return fail("oauth.client_secret: %v", err)
				}
				s.OAuth = &OAuthSpec{ClientID: r.OAuth.ClientID, ClientSecret: r.OAuth.ClientSecret, Scopes: append([]string(nil), r.OAuth.Scopes...)}
			}
		}
		if len(r.Args) > 0 || len(r.Env) > 0 {
			warn("args and env are ignored for a url server")
		}
		if len(r.ArtifactRoots) > 0 {
			warn("artifact_roots is ignored for a url server: a remote server's file:// refs are always rejected")
		}
		return s.parseLimits(&r, fail, warn)
	case !hasCommand:
		if len(r.Headers) > 0 {
			return fail("headers needs url (a command server gets env)")
		}
		return fail("command (or url) is required")
	}
	if len(r.Headers) > 0 {
		return fail("headers needs url (a command server gets env)")
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

	if s = s.parseLimits(&r, fail, warn); s.Err != nil {
		return s
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

// parseLimits fills the timeouts and size limits of s from r.
func (s *ServerSpec) parseLimits(r *rawServer, fail func(string, ...any) ServerSpec, warn func(string, ...any)) ServerSpec {
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
		return *s
	}
	if s.StartupTimeout, ok = secs("startup_timeout_seconds", r.StartupTimeoutSeconds, mcpclient.DefaultStartupTimeout, MaxStartupTimeout); !ok {
		return *s
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
	return *s
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
// server would get (redact.IsSecretEnvName, which mcpclient.LooksSecret
// is too).
func IsSecretEnvName(name string) bool { return redact.IsSecretEnvName(name) }

// ClientConfig builds the mcpclient config of s: for a command server the
// minimal environment from base (odek's environment) plus s.Env with every
// secret-looking name stripped (IsSecretEnvName); for a url server the
// headers with their ${NAME} references resolved from base (operator file
// only: ParseConfig refuses references in a project file). warnings name
// each stripped configured key — never a value. dir is the server's
// working directory ("" ⇒ odek's). The error names a header and the
// variable it references that base does not set, never a value.
func (s *ServerSpec) ClientConfig(base []string, dir string) (cfg mcpclient.ServerConfig, warnings []string, err error) {
	cfg = mcpclient.ServerConfig{
		Name:              s.Name,
		Timeout:           s.Timeout,
		MaxResponseBytes:  s.MaxResponseBytes,
		MaxResultChars:    s.MaxResultChars,
		StartupTimeout:    s.StartupTimeout,
		ProtocolVersion:   s.ProtocolVersion,
		AllowInsecureHTTP: s.AllowInsecureHTTP,
	}
	if s.URL != "" {
		cfg.URL = s.URL
		cfg.Headers, err = resolveHeaders(s.Name, s.Headers, base)
		if err == nil {
			cfg.Auth, err = s.oauthSource(base)
		}
		return cfg, nil, err
	}
	env, stripped := mcpclient.FilterEnv(base, s.Env, IsSecretEnvName)
	for _, k := range stripped {
		if _, configured := s.Env[k]; configured {
			warnings = append(warnings, fmt.Sprintf("MCP server %q: env key %q looks like a secret or is not a valid name; it is not passed to the server", s.Name, clipName(k)))
		}
	}
	cfg.Command = s.Command
	cfg.Args = append([]string(nil), s.Args...)
	cfg.Env = env
	cfg.Dir = dir
	cfg.ArtifactRoots = append([]string(nil), s.ArtifactRoots...)
	return cfg, warnings, nil
}

// oauthSource is the Authorizer of an operator url server: the stored
// login under $ODEK_HOME/mcp-auth (mcpauth), when the entry has an oauth
// object or a login is stored and no Authorization header is configured.
// A project server never gets one: the operator's tokens go only to the
// operator's servers, and a Source only to the URL they were issued for.
func (s *ServerSpec) oauthSource(base []string) (mcpclient.Authorizer, error) {
	if s.Source != SourceOperator {
		return nil, nil
	}
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil, nil
		}
	}
	home, err := config.HomeDir(base)
	if err != nil {
		return nil, nil // no operator home: no stored logins
	}
	store := mcpauth.NewStore(home)
	if s.OAuth == nil {
		if _, err := os.Stat(store.Path(s.Name)); err != nil {
			return nil, nil
		}
	}
	src, err := mcpauth.NewSource(store, s.Name, s.URL, nil)
	if err != nil {
		return nil, err
	}
	return src, nil
}

// checkServerURL applies mcpclient's url rules.
func checkServerURL(u string, allowInsecure bool) error {
	return mcpclient.CheckURL(u, allowInsecure)
}

// displayURL is a url for messages (no query: it may carry a token).
func displayURL(u string) string { return mcpclient.RedactURL(u) }

// checkHeaderTemplate checks a header value as configured: no CR, LF or
// NUL, and every "${" opens a reference ${NAME} to a valid variable name.
func checkHeaderTemplate(v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return errors.New("value contains CR, LF or NUL")
	}
	_, err := expandRefs(v, func(string) (string, bool) { return "", true })
	return err
}

// expandRefs replaces every ${NAME} in v with lookup(NAME). A reference
// that is unterminated, empty, not a variable name, or not set is an
// error naming it (never a value).
func expandRefs(v string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String(), nil
		}
		b.WriteString(v[:i])
		end := strings.IndexByte(v[i:], '}')
		if end < 0 {
			return "", errors.New("unterminated ${ reference")
		}
		name := v[i+2 : i+end]
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s} is not a variable name", clipName(name))
		}
		val, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("references ${%s}, which is not set in odek's environment", name)
		}
		b.WriteString(val)
		v = v[i+end+1:]
	}
}

func validEnvName(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// resolveHeaders expands the ${NAME} references of every header from
// base ("KEY=value" entries). A resolved value holding CR or LF is an
// error (it would split the header).
func resolveHeaders(server string, h map[string]string, base []string) (map[string]string, error) {
	if len(h) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(base))
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		val, err := expandRefs(v, func(n string) (string, bool) { x, ok := env[n]; return x, ok })
		if err == nil && strings.ContainsAny(val, "\r\n\x00") {
			err = errors.New("the resolved value contains CR, LF or NUL")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: MCP server %q: headers[%q]: %v", ErrConfig, server, clipName(k), err)
		}
		out[k] = val
	}
	return out, nil
}

// passedEnv is the configured environment that actually reaches the
// server: s.Env without stripped names. Sorted "KEY=value".
func (s *ServerSpec) passedEnv() []string {
	env, _ := mcpclient.FilterEnv(nil, s.Env, IsSecretEnvName)
	return env
}

// ResolveSecret is o.ClientSecret with its ${NAME} references resolved
// from base; the error names the reference, never a value.
func (o *OAuthSpec) ResolveSecret(server string, base []string) (string, error) {
	if o == nil || o.ClientSecret == "" {
		return "", nil
	}
	h, err := resolveHeaders(server, map[string]string{"oauth.client_secret": o.ClientSecret}, base)
	if err != nil {
		return "", err
	}
	return h["oauth.client_secret"], nil
}
