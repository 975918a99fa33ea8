// Package mcpclient is odek's client for MCP extension servers: JSON-RPC
// 2.0 over a child process's stdio, one message per line, or over MCP's
// Streamable HTTP transport to a remote server (ServerConfig.URL; see
// http.go), built for the limits of the odek-extension/v1 contract. It spawns a server, runs the
// handshake, lists its tools, calls them, and renders their results for
// the model through package artifacts. A remote server that needs OAuth
// gets its bearer token from ServerConfig.Auth (an Authorizer, normally
// mcpclient/mcpauth's Source); a 401 asks it once for a fresh token, then
// fails with *AuthRequiredError naming `odek mcp login <server>`.
//
// # Lifecycle
//
// Start validates the ServerConfig (ServerConfig.Limits: defaults, clamps
// with warnings, errors for negative values and for max_response_bytes
// above the 64 MiB ceiling — such a server is not started), spawns the
// command in its own process group with exactly cfg.Env as its environment
// (FilterEnv builds the minimal one; odek's own environment is never
// inherited), and within StartupTimeout sends initialize with
// protocolVersion "2025-03-26" (or ServerConfig.ProtocolVersion) and the
// roots capability when ServerConfig.Roots is set, checks the answer
// (CheckProtocolVersion:
// 2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25 are accepted, anything
// else is refused naming server and version), sends
// notifications/initialized and follows tools/list through nextCursor (at
// most MaxToolPages pages and MaxTools tools; a repeated cursor is an
// error). A listed tool with an invalid name rejects the whole server.
//
// Close runs the close sequence: close stdin, wait CloseGrace, SIGTERM to
// the process group, wait CloseGrace (until no live process is left in the
// group), SIGKILL to the group, reap. A grandchild that stays in the group
// does not survive; one that moves itself to another process group or
// session escapes (that needs a cgroup or a PID namespace, outside this
// package).
//
// # Requests and the reader
//
// Requests get ids from a per-connection counter and wait on a channel in
// a map keyed by id; any number may be in flight. Writes go through one
// buffered writer under a mutex, one line per message, each flushed and
// bounded by a write deadline (a server that stops reading its stdin is
// disconnected, not waited for). A single reader goroutine owns stdout:
//
//   - a response is delivered to the request with its id; a response whose
//     id is missing, not a positive integer, unknown or already answered is
//     dropped (so for a result and an error sent for one id, the first
//     wins); a response with both result and error counts as the error;
//   - a server→client request is answered from a separate goroutine (a
//     flood beyond a small queue is dropped), so a server that does not
//     read cannot stall stdout: ping with an empty result, roots/list with
//     ServerConfig.Roots, sampling/createMessage with the -1 rejection,
//     elicitation/create with the decline action, anything else with
//     -32601 "method not found" (duties.go);
//   - notifications/progress goes to the callback of the call whose token
//     it names (WithProgress), notifications/tools/list_changed starts a
//     re-list in the background (toolstate.go: removed or changed tools
//     fail with ErrToolUnavailable, new ones are never callable, and
//     ServerConfig.OnToolsChanged is told); other notifications and lines
//     that are not JSON-RPC are skipped and logged (rate limited), never
//     fatal.
//
// On Linux the reader waits in a plain blocking read(2) of stdout on its
// own thread rather than in the runtime's netpoller, and after handing a
// response to its caller it yields before reading again, so the caller
// runs at once on the same thread: one syscall and no scheduler round trip
// per response (see docs/BENCHMARKS.md for what that buys). Close wakes a
// blocked read by writing a newline through a second, non-blocking write
// end opened via /proc/self/fd; the read then reports the connection
// closed. stdin stays non-blocking with write deadlines.
//
// Lines are read by a bounded reader: a line longer than MaxResponseBytes
// (excluding the newline) is read in 64 KiB chunks only until it exceeds
// the limit, then the connection is closed and every pending request fails
// with a *LineTooLongError naming server and limit. Memory spent on such a
// line is about the limit, not the line (see TestHugeLineMemoryBounded and
// BenchmarkHugeLinePeakRSS). stdout ending — also in the middle of a line,
// whose part is discarded — closes the connection with ErrConnClosed and
// the exit status. stderr is drained line by line into the logger (lines
// cut to MaxStderrLineBytes, control characters removed, at most ~100
// lines a second logged and the rest counted), never parsed.
//
// # Calls
//
// Client.Call sends tools/call with the arguments compacted to one line.
// Past the per-call Timeout it returns a *TimeoutError (server, tool,
// limit), sends notifications/cancelled with the request id and leaves the
// server running for the next call; a cancelled ctx does the same with
// ctx.Err(). A result becomes a ToolResult: text items joined by newlines
// and neutralised (artifacts.Neutralize), non-text items (image, audio,
// resource, resource_link) summarised on one "[odek content]" line each
// with type, media type, name and size — never their content —, an
// odek.tool-result/v1 envelope in a text item replaced by its text with
// its artifact refs validated (artifacts.Validator over ArtifactRoots) and
// rendered as "[odek artifact]" lines. The text (without those lines) is
// measured as the server sent it and cut to MaxResultChars code points with
// the contract's exact notice; the metadata lines follow it whole, bounded
// by the ref limit and their fields' display caps (artifacts.Truncate). An
// isError result (opened by ErrorFraming's line naming server and tool)
// and a JSON-RPC error answer ("MCP error <code>: <message>") are
// ToolResults with IsError set, subject to the same limit.
// structuredContent is appended as compact JSON when it carries data the
// text does not; an embedded text resource up to MaxInlineResourceChars is
// shown; a resource_link to a file inside ArtifactRoots becomes an
// artifact ref. A remote server's artifact refs are always rejected.
// Go errors from Call are *CallError naming server and tool, wrapping the
// cause: a broken envelope (artifacts.ErrMalformedEnvelope), a rejected
// ref (*artifacts.RefError with its id and reason), a timeout, a closed
// connection. The text is not yet wrapped as untrusted content: the agent
// does that with artifacts.WrapUntrusted.
//
// # Restarts
//
// A server whose connection closed (oversized line, crash, exit, protocol
// violation) is restarted by the next Call, synchronously and under
// StartupTimeout, when the policy allows: at most MaxRestarts restarts per
// Client (per run), the first at once and each later one only after a
// backoff (1s, 2s, 4s, … capped at 30s) counted from when the connection
// closed. Otherwise — and while another call is restarting it — calls fail
// fast with ErrServerDown saying why and what took the server down. Each
// restart is logged and reported to ServerConfig.OnRestart. A restarted
// server must list exactly the tools of its latest listing (at Start, or
// after the last notifications/tools/list_changed: names, titles,
// descriptions, schemas, annotations); otherwise it is stopped and never
// restarted again (ErrToolsChanged). Over HTTP a new session (after a
// network failure or a 404 for the session) is such a restart.
// Ping health-checks the current connection and never restarts.
//
// # Names
//
// Server names are 1–64 characters of [A-Za-z0-9_-] without "__"
// (ValidateName); tool names may also contain '.' and be 128 characters
// long (ValidateToolName), and MapToolName turns '.' into '_' for the
// qualified name. The model sees a tool as QualifiedName(server, tool):
// "<server>__<tool>" when that is at most 64 characters; otherwise the first
// 53 characters of "<server>__<tool>", "_", and the first 10 hex digits of
// the SHA-256 of "<server>__<tool>" — 64 characters, deterministic, and
// readable from the left. NameMap maps qualified names back and reports
// collisions. Collisions with built-in tools are the agent's to check.
//
// # Concurrency and ownership
//
// A Client is safe for concurrent use. Whoever calls Start owns the Client
// and must Close it; Close fails in-flight calls with ErrConnClosed and
// later calls with ErrClosed. ToolResult and Tool values are owned by the
// caller; Tool.InputSchema bytes are shared between copies and must not be
// modified. The package is Unix-only (process groups and signals).
package mcpclient
