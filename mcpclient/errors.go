package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; match with errors.Is. Typed errors below carry the data.
var (
	// ErrInvalidConfig: a ServerConfig field is unusable (negative limit,
	// max_response_bytes above the ceiling, empty command); the server is
	// not started.
	ErrInvalidConfig = errors.New("mcpclient: invalid server config")
	// ErrInvalidName: a server or tool name breaks the naming rules.
	ErrInvalidName = errors.New("mcpclient: invalid name")
	// ErrUnsupportedProtocol: the server answered initialize with a
	// protocol version this client does not support.
	ErrUnsupportedProtocol = errors.New("mcpclient: unsupported MCP protocol version")
	// ErrStartupTimeout: spawn, initialize and tools/list did not finish
	// within the startup timeout.
	ErrStartupTimeout = errors.New("mcpclient: server start-up timed out")
	// ErrTooManyTools: tools/list returned more tools than MaxTools, or
	// more pages than MaxToolPages.
	ErrTooManyTools = errors.New("mcpclient: server lists too many tools")
	// ErrInvalidTool: a listed tool is unusable (duplicate name, input
	// schema not a JSON object).
	ErrInvalidTool = errors.New("mcpclient: invalid tool definition")
	// ErrToolsChanged: a restarted server lists different tools than it did
	// when it was first started (approvals were given for the old list).
	ErrToolsChanged = errors.New("mcpclient: restarted server lists different tools")
	// ErrUnknownTool: Call named a tool the server did not list.
	ErrUnknownTool = errors.New("mcpclient: unknown tool")
	// ErrInvalidArgs: Call's arguments are not a JSON object.
	ErrInvalidArgs = errors.New("mcpclient: tool arguments are not a JSON object")
	// ErrConnClosed: the server's stdout ended (it exited or crashed) or the
	// connection was closed because of a protocol violation.
	ErrConnClosed = errors.New("mcpclient: server connection closed")
	// ErrServerDown: the server's connection is closed and it is not
	// restarted for this call (restart limit reached, backoff not elapsed,
	// or another call is restarting it). Calls fail fast with it.
	ErrServerDown = errors.New("mcpclient: server is down")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("mcpclient: client closed")
	// ErrTimeout: a request outlived its timeout. *TimeoutError wraps it.
	ErrTimeout = errors.New("mcpclient: request timed out")
	// ErrProtocol: the server sent a response this client cannot use
	// (a result that does not decode, a response with neither result nor
	// error).
	ErrProtocol = errors.New("mcpclient: protocol violation")
	// ErrMultipleEnvelopes: one tool result carried more than one
	// odek.tool-result/v1 envelope.
	ErrMultipleEnvelopes = errors.New("mcpclient: more than one odek.tool-result/v1 envelope in one result")
	// ErrNameCollision: two (server, tool) pairs map to one qualified name.
	ErrNameCollision = errors.New("mcpclient: qualified tool name collision")
)

// ErrAuthRequired: a remote server answered HTTP 401. *AuthRequiredError
// wraps it.
var ErrAuthRequired = errors.New("mcpclient: server requires authorization")

// Authorizer supplies the bearer token of a remote server (see
// ServerConfig.Auth). It must be safe for concurrent use.
type Authorizer interface {
	// Token returns the access token to send. stale, when not "", is a
	// token the server just refused with 401: return a different one
	// (refreshed) or an error. Errors must not contain a token.
	Token(ctx context.Context, stale string) (string, error)
}

// AuthRequiredError reports a 401 from a remote server: no token was
// configured, the token was refused after a refresh, or the Authorizer
// failed (Err). It names the server and the command that logs in; it never
// carries a token or the WWW-Authenticate challenge's values.
type AuthRequiredError struct {
	Server string
	// Err is the Authorizer's error, if that is why there is no token.
	Err error
}

func (e *AuthRequiredError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v: server %q has no usable OAuth token: run `odek mcp login %s` (%v)", ErrAuthRequired, e.Server, e.Server, e.Err)
	}
	return fmt.Sprintf("%v: server %q answered HTTP 401: run `odek mcp login %s` (or fix its configured Authorization header)", ErrAuthRequired, e.Server, e.Server)
}

func (e *AuthRequiredError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrAuthRequired, e.Err}
	}
	return []error{ErrAuthRequired}
}

// LineTooLongError reports a line from the server's stdout longer than
// MaxResponseBytes. The connection is closed and every pending call fails
// with it.
type LineTooLongError struct {
	Server string
	// Limit is the configured max_response_bytes.
	Limit int64
	// Observed is how many bytes of the line had been read when the client
	// gave up: more than Limit; the line was at least that long.
	Observed int64
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("mcpclient: server %q sent a response line exceeding max_response_bytes=%d (gave up after %d bytes); connection closed", e.Server, e.Limit, e.Observed)
}

// Is makes errors.Is(err, ErrConnClosed) true: the connection is gone.
func (e *LineTooLongError) Is(target error) bool { return target == ErrConnClosed }

// TimeoutError reports a request that outlived its timeout. The client sent
// notifications/cancelled for it; the server process stays up.
type TimeoutError struct {
	Server string
	// Tool is the tool called; empty for protocol requests (Method says
	// which).
	Tool   string
	Method string
	// Limit is the timeout that expired.
	Limit time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Tool != "" {
		return fmt.Sprintf("mcpclient: server %q tool %q: no result within timeout_seconds=%g", e.Server, e.Tool, e.Limit.Seconds())
	}
	return fmt.Sprintf("mcpclient: server %q: %s got no answer within %s", e.Server, e.Method, e.Limit)
}

// Is matches ErrTimeout and context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// StartError reports a failed start (or restart): which server, which
// phase ("config", "spawn", "initialize", "tools/list") and why.
type StartError struct {
	Server string
	Phase  string
	Err    error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("mcpclient: server %q failed to start (%s): %v", e.Server, e.Phase, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// CallError is every error Call returns: it names the server and the tool
// and wraps the cause (a *TimeoutError, *LineTooLongError,
// *artifacts.RefError, artifacts.ErrMalformedEnvelope, ErrServerDown, ...).
type CallError struct {
	Server, Tool string
	Err          error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("mcpclient: server %q tool %q: %v", e.Server, e.Tool, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// RPCError is a JSON-RPC error answer to a protocol request (initialize,
// tools/list, ping). A JSON-RPC error answer to tools/call is not a Go
// error: it becomes a ToolResult with IsError set.
type RPCError struct {
	Server string
	Method string
	Code   int64
	// Message is the server's message, cut to 512 characters.
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("mcpclient: server %q answered %s with JSON-RPC error %d: %s", e.Server, e.Method, e.Code, e.Message)
}
