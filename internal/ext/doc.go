// Package ext is odek's extension host: it turns the mcp_servers sections
// of the operator file ($ODEK_HOME/config.json) and the project file
// (./odek.json) into running MCP servers whose tools the agent can call.
//
// Load parses both sections (ParseConfig: defaults, clamps with warnings
// naming the server, errors for negative values and for
// max_response_bytes above the 64 MiB ceiling, unknown fields ignored,
// auto_approve and danger_class stripped from project entries), asks for
// the approvals a server needs (Decide* are the pure rules; approvals
// persist in $ODEK_HOME/approvals.json, keyed by SHA-256 digests of what
// was approved), starts every enabled and approved server concurrently —
// each bounded by its startup timeout — through package mcpclient, and
// adapts every approved MCP tool to tools.Tool under its qualified name
// (mcpclient.QualifiedName: "<server>__<tool>", shortened with a hash past
// 64 characters). A required server that cannot be loaded fails Load; an
// optional one is reported and skipped. The outcome of every server is a
// ServerReport, for stderr and for the run_started event.
//
// Tool results reach the model rendered by mcpclient (artifact refs
// validated fail closed against the server's artifact_roots and shown as
// metadata lines, the text cut to max_result_chars with the contract's
// notice) and then wrapped by artifacts.WrapUntrusted in a per-call
// nonce'd boundary — error text included.
//
// Options.Only restricts Load to some servers; with a prompter that
// answers yes, that is `odek ext approve`: the questions of a run answered
// ahead of time and saved.
//
// Every call of an MCP tool is assessed with the server's danger class
// (danger_class, operator file only; default DefaultDangerClass), so the
// operator's danger policy still decides each call.
//
// Concurrency and ownership: Load may be called concurrently (each call
// owns what it starts; approvals.json writes are atomic renames, and the
// last writer wins). A *Set is safe for concurrent use; its tools may be
// called concurrently. Whoever receives a Set from Load must Close it,
// which stops every server it started. Only Options.BaseEnv, never the
// process environment, is read; files read or written are approvals.json
// under Options.Home and nothing else.
package ext
