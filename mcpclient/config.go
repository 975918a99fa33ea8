package mcpclient

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/redact"
	"github.com/sirupsen/logrus"
)

// Defaults and ceilings of the odek-extension/v1 contract, and the named
// limits of this client.
const (
	DefaultTimeout                = 30 * time.Second
	MaxTimeout                    = 3600 * time.Second
	DefaultMaxResponseBytes int64 = 10 << 20
	// MaxResponseBytesCeiling is the absolute ceiling of max_response_bytes:
	// a config above it is an error and the server is not started.
	MaxResponseBytesCeiling int64 = 64 << 20
	DefaultMaxResultChars         = 200000
	MaxResultCharsCeiling         = 1000000
	DefaultStartupTimeout         = 10 * time.Second
	// DefaultMaxTools is the most tools one server may list; a server
	// listing more is rejected as a whole (ErrTooManyTools).
	DefaultMaxTools = 1000
	// MaxToolPages bounds the tools/list pages followed through
	// nextCursor.
	MaxToolPages = 100
	// DefaultMaxRestarts is the number of restarts per Client (per run).
	DefaultMaxRestarts = 3
	// DefaultCloseGrace is how long Close waits after closing stdin and
	// again after SIGTERM before escalating.
	DefaultCloseGrace = 2 * time.Second
)

// ProtocolVersion is the MCP version odek sends in initialize by default
// (the odek-extension/v1 contract's).
const ProtocolVersion = "2025-03-26"

// SupportedProtocolVersions are the versions accepted in the server's
// initialize answer, and the values ServerConfig.ProtocolVersion may take.
// What differs between them and how odek handles it:
//
//   - 2025-03-26 (sent by default): tool annotations, audio content,
//     Streamable HTTP (replacing HTTP+SSE of 2024-11-05).
//   - 2025-06-18: structuredContent and outputSchema (rendered when the
//     structured data says more than the text), resource_link content
//     (summarised; artifact_read-able inside artifact_roots), tool titles,
//     elicitation (declined), no JSON-RPC batches (odek never sends any),
//     and on HTTP the MCP-Protocol-Version header on every request after
//     initialize (sent with the negotiated version whatever it is).
//   - 2025-11-25: tool names may contain '.' (mapped to the contract's
//     alphabet in qualified names), icons and tasks (ignored: additive
//     fields), URL-mode elicitation (declined like the rest).
//
// An answer with any other version is rejected (the MCP rule: a client
// that does not support the server's version disconnects).
var SupportedProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// CheckProtocolVersion returns nil for a supported version and an error
// wrapping ErrUnsupportedProtocol naming server and version otherwise.
func CheckProtocolVersion(server, version string) error {
	if slices.Contains(SupportedProtocolVersions, version) {
		return nil
	}
	return fmt.Errorf("%w: server %q answered protocolVersion %q; supported: %s", ErrUnsupportedProtocol, server, clipDisplay(version, 64), strings.Join(SupportedProtocolVersions, ", "))
}

// ServerConfig describes one MCP server. The zero value of every limit
// means its default; negative limits are errors.
type ServerConfig struct {
	// Name is the server's name (ValidateName rules). It qualifies its
	// tools' names and names the server in errors and logs.
	Name string
	// Command is the executable, looked up in odek's PATH when it has no
	// slash. Exactly one of Command and URL is required.
	Command string
	// URL is a remote server's Streamable HTTP endpoint (https://, or
	// http:// to a loopback address unless AllowInsecureHTTP).
	URL string
	// Headers are sent with every HTTP request (values already resolved;
	// never logged). Only with URL.
	Headers map[string]string
	// AllowInsecureHTTP permits http:// to a non-loopback host.
	AllowInsecureHTTP bool
	// Auth, when set, supplies the OAuth bearer token sent as
	// Authorization with every HTTP request (mcpclient/mcpauth's Source).
	// A 401 answer asks it once for a fresh token (refresh) and retries;
	// a second 401 is an *AuthRequiredError. Only with URL; Headers may
	// then not set Authorization.
	Auth Authorizer
	// HTTPClient, when set, carries the HTTP requests (tests, a shared
	// transport). nil ⇒ a client with TLS verification on and the
	// timeouts of this config. Only with URL.
	HTTPClient HTTPDoer
	// ProtocolVersion is sent in initialize; one of
	// SupportedProtocolVersions. "" ⇒ ProtocolVersion.
	ProtocolVersion string
	// Roots, when set, makes odek advertise the roots capability and
	// answer roots/list with the directories it returns (absolute paths;
	// others are left out). It is called on every roots/list, so it may
	// return a job's current roots; call Client.RootsChanged when they
	// change. nil ⇒ no roots capability (roots/list is method not found).
	Roots func() []string
	// OnToolsChanged, when set, is told about every re-listing after
	// notifications/tools/list_changed that changes something. It is
	// called from a background goroutine; it must not block for long.
	OnToolsChanged func(ToolsChange)
	// Args are the command-line arguments.
	Args []string
	// Env is the child's complete environment as "KEY=value" entries,
	// normally built with FilterEnv. Empty ⇒ an empty environment: the
	// child never inherits odek's environment.
	Env []string
	// Dir is the child's working directory; "" ⇒ odek's.
	Dir string
	// Timeout is the per-request timeout (timeout_seconds). 0 ⇒
	// DefaultTimeout; above MaxTimeout it is clamped (with a warning).
	Timeout time.Duration
	// MaxResponseBytes bounds one JSON-RPC line from the server, in bytes,
	// excluding the newline. 0 ⇒ DefaultMaxResponseBytes; above
	// MaxResponseBytesCeiling is an error.
	MaxResponseBytes int64
	// MaxResultChars bounds the text forwarded to the model, in Unicode
	// code points. 0 ⇒ DefaultMaxResultChars; above MaxResultCharsCeiling
	// it is clamped (with a warning).
	MaxResultChars int
	// ArtifactRoots are the directories under which file:// artifact refs
	// are accepted. Empty ⇒ every artifact ref is rejected.
	ArtifactRoots []string
	// MaxArtifactBytes is the largest artifact accepted, in bytes. 0 ⇒
	// artifacts.DefaultMaxArtifactBytes.
	MaxArtifactBytes int64
	// MaxArtifactRefs is the most refs per result. 0 ⇒
	// artifacts.DefaultMaxRefs.
	MaxArtifactRefs int
	// StartupTimeout bounds spawn + initialize + tools/list. 0 ⇒
	// DefaultStartupTimeout.
	StartupTimeout time.Duration
	// MaxTools is the most tools the server may list. 0 ⇒
	// DefaultMaxTools.
	MaxTools int
	// MaxRestarts is how many times a server whose connection closed is
	// restarted over the Client's life. 0 ⇒ DefaultMaxRestarts; negative ⇒
	// never restarted.
	MaxRestarts int
	// CloseGrace is each wait of the close sequence (after closing stdin,
	// after SIGTERM). 0 ⇒ DefaultCloseGrace.
	CloseGrace time.Duration
	// ClientVersion is sent as clientInfo.version. "" ⇒ "dev".
	ClientVersion string
	// Logger receives the server's stderr, restarts, dropped messages and
	// warnings, with field server=Name. nil ⇒ discarded.
	Logger logrus.FieldLogger
	// OnRestart, when set, is told about every restart attempt. It is
	// called synchronously from the call that restarted the server; it must
	// not block for long nor call the Client.
	OnRestart func(RestartReport)
	// Start, when set, starts the server's process (and every restart of
	// it) instead of exec.Cmd.Start: the sandbox's confined Start, for a server
	// that must run confined. The command comes fully set up (pipes,
	// process group); Start must start it or return an error.
	Start func(*exec.Cmd) error
}

// RestartReport describes one restart attempt.
type RestartReport struct {
	Server string
	// Attempt counts restarts of this Client, starting at 1; Max is the
	// limit.
	Attempt, Max int
	// Cause is why the previous connection closed.
	Cause error
	// Err is nil when the restart succeeded.
	Err error
}

// Limits are the effective values of a ServerConfig after defaults and
// clamping.
type Limits struct {
	Timeout          time.Duration
	MaxResponseBytes int64
	MaxResultChars   int
	StartupTimeout   time.Duration
	MaxTools         int
	MaxRestarts      int
	CloseGrace       time.Duration
	// ProtocolVersion is the version sent in initialize.
	ProtocolVersion string
	// Warnings name each value that was clamped, with the server's name.
	Warnings []string
}

// Limits validates the config and returns its effective limits. It is a
// pure function; errors wrap ErrInvalidConfig (or ErrInvalidName) and name
// the server, the field and the value.
func (c *ServerConfig) Limits() (Limits, error) {
	if err := ValidateName(c.Name); err != nil {
		return Limits{}, fmt.Errorf("server name: %w", err)
	}
	bad := func(field string, v any, why string) (Limits, error) {
		return Limits{}, fmt.Errorf("%w: server %q: %s=%v %s", ErrInvalidConfig, c.Name, field, v, why)
	}
	switch {
	case c.Command == "" && c.URL == "":
		return bad("command", `""`, "is required (or url for a remote server)")
	case c.Command != "" && c.URL != "":
		return bad("url", clipDisplay(c.URL, 80), "and command are both set; a server is either a command or a url")
	case c.URL != "":
		if err := checkURL(c.URL, c.AllowInsecureHTTP); err != nil {
			return bad("url", redactURL(c.URL), err.Error())
		}
		for k, v := range c.Headers {
			if err := checkHeader(k, v); err != nil {
				return Limits{}, fmt.Errorf("%w: server %q: headers[%q]: %v", ErrInvalidConfig, c.Name, clipDisplay(k, 64), err)
			}
		}
		if c.Auth != nil {
			for k := range c.Headers {
				if strings.EqualFold(k, "Authorization") {
					return bad("headers", "{Authorization: …}", "is set by the OAuth login (odek mcp login); remove the configured Authorization header")
				}
			}
		}
	case len(c.Headers) > 0:
		return bad("headers", "{…}", "needs url (a command server gets env, not headers)")
	case c.Auth != nil:
		return bad("auth", "(oauth)", "needs url (OAuth applies to remote servers only)")
	}
	l := Limits{
		Timeout:          c.Timeout,
		MaxResponseBytes: c.MaxResponseBytes,
		MaxResultChars:   c.MaxResultChars,
		StartupTimeout:   c.StartupTimeout,
		MaxTools:         c.MaxTools,
		MaxRestarts:      c.MaxRestarts,
		CloseGrace:       c.CloseGrace,
		ProtocolVersion:  c.ProtocolVersion,
	}
	switch {
	case l.ProtocolVersion == "":
		l.ProtocolVersion = ProtocolVersion
	case !slices.Contains(SupportedProtocolVersions, l.ProtocolVersion):
		return bad("protocol_version", fmt.Sprintf("%q", clipDisplay(l.ProtocolVersion, 32)), "is not supported (want one of "+strings.Join(SupportedProtocolVersions, ", ")+")")
	}
	switch {
	case l.Timeout < 0:
		return bad("timeout", l.Timeout, "is negative")
	case l.Timeout == 0:
		l.Timeout = DefaultTimeout
	case l.Timeout > MaxTimeout:
		l.Warnings = append(l.Warnings, fmt.Sprintf("server %q: timeout_seconds=%g clamped to %g", c.Name, l.Timeout.Seconds(), MaxTimeout.Seconds()))
		l.Timeout = MaxTimeout
	}
	switch {
	case l.MaxResponseBytes < 0:
		return bad("max_response_bytes", l.MaxResponseBytes, "is negative")
	case l.MaxResponseBytes == 0:
		l.MaxResponseBytes = DefaultMaxResponseBytes
	case l.MaxResponseBytes > MaxResponseBytesCeiling:
		return bad("max_response_bytes", l.MaxResponseBytes, fmt.Sprintf("exceeds the ceiling of %d; the server is not started", MaxResponseBytesCeiling))
	}
	switch {
	case l.MaxResultChars < 0:
		return bad("max_result_chars", l.MaxResultChars, "is negative")
	case l.MaxResultChars == 0:
		l.MaxResultChars = DefaultMaxResultChars
	case l.MaxResultChars > MaxResultCharsCeiling:
		l.Warnings = append(l.Warnings, fmt.Sprintf("server %q: max_result_chars=%d clamped to %d", c.Name, l.MaxResultChars, MaxResultCharsCeiling))
		l.MaxResultChars = MaxResultCharsCeiling
	}
	switch {
	case l.StartupTimeout < 0:
		return bad("startup_timeout", l.StartupTimeout, "is negative")
	case l.StartupTimeout == 0:
		l.StartupTimeout = DefaultStartupTimeout
	}
	switch {
	case l.MaxTools < 0:
		return bad("max_tools", l.MaxTools, "is negative")
	case l.MaxTools == 0:
		l.MaxTools = DefaultMaxTools
	}
	switch {
	case l.MaxRestarts == 0:
		l.MaxRestarts = DefaultMaxRestarts
	case l.MaxRestarts < 0:
		l.MaxRestarts = 0
	}
	switch {
	case l.CloseGrace < 0:
		return bad("close_grace", l.CloseGrace, "is negative")
	case l.CloseGrace == 0:
		l.CloseGrace = DefaultCloseGrace
	}
	if c.MaxArtifactBytes < 0 {
		return bad("max_artifact_bytes", c.MaxArtifactBytes, "is negative")
	}
	if c.MaxArtifactRefs < 0 {
		return bad("max_artifact_refs", c.MaxArtifactRefs, "is negative")
	}
	return l, nil
}

// baseEnvNames are passed from odek's environment to every server.
var baseEnvNames = []string{"PATH", "HOME", "USER", "LANG", "TZ", "TMPDIR", "TERM"}

// FilterEnv builds a server's minimal environment: from base (odek's
// environment, "KEY=value" entries) only PATH, HOME, USER, LANG, TZ,
// TMPDIR, TERM and LC_*; then every configured entry, which overrides. Any
// name for which isSecret reports true is left out, configured or not, and
// listed in stripped (names only, never values, sorted) so the caller can
// warn. Names that are empty or contain '=' or NUL are stripped too. A nil
// isSecret uses LooksSecret. The result is sorted by name.
func FilterEnv(base []string, configured map[string]string, isSecret func(string) bool) (env, stripped []string) {
	if isSecret == nil {
		isSecret = LooksSecret
	}
	vals := make(map[string]string, len(baseEnvNames)+len(configured))
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if slices.Contains(baseEnvNames, k) || strings.HasPrefix(k, "LC_") {
			vals[k] = v
		}
	}
	for k, v := range configured {
		vals[k] = v
	}
	seenStripped := map[string]bool{}
	for k, v := range vals {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) || isSecret(k) {
			if !seenStripped[k] {
				seenStripped[k] = true
				stripped = append(stripped, k)
			}
			continue
		}
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	sort.Strings(stripped)
	return env, stripped
}

// LooksSecret is the default secret-name test of FilterEnv: the name,
// upper-cased and stripped of '_', '-', '.' and ' ', contains API_KEY,
// TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, PRIVATE_KEY, ACCESS_KEY,
// PASSPHRASE, COOKIE or AUTHORIZATION. It is the same test odek's
// redactor uses for names handed to other processes.
func LooksSecret(name string) bool { return redact.IsSecretEnvName(name) }
