package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/internal/backoff"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/sirupsen/logrus"
)

// Tool is one tool a server listed.
type Tool struct {
	// Name is the server's name for the tool (valid per ValidateToolName:
	// it may contain dots; QualifiedName maps it to the contract's rule).
	Name string
	// Title is the tool's display title (2025-06-18 and later), as sent.
	Title       string
	Description string
	// InputSchema is the tool's JSON Schema, a compact JSON object
	// ({"type":"object"} when the server gave none).
	InputSchema json.RawMessage
	// Annotations are the server's tool annotations as sent (may be nil).
	Annotations json.RawMessage
	// OutputSchema is the schema of the tool's structuredContent
	// (2025-06-18 and later), compact, or nil.
	OutputSchema json.RawMessage
}

// ServerInfo is what the server said about itself in initialize.
type ServerInfo struct {
	Name, Version   string
	ProtocolVersion string
	// Instructions is the server's instructions text, as sent (untrusted).
	Instructions string
}

// Client is a running MCP server and the connection to it. It is safe for
// concurrent use. The caller that Starts it must Close it.
type Client struct {
	cfg       ServerConfig
	lim       Limits
	log       logrus.FieldLogger
	validator *artifacts.Validator

	// tools is fixed after Start: the list approvals are given for.
	// current is the latest listing (a restart must list it exactly;
	// notifications/tools/list_changed replaces it).
	tools   []Tool
	current atomic.Pointer[toolState]
	info    ServerInfo

	// nextToken numbers progress tokens; progressFns maps a token of a
	// call in flight to its callback.
	nextToken   atomic.Uint64
	progressMu  sync.Mutex
	progressFns map[uint64]func(Progress)
	started     atomic.Bool // Start finished: tools and conn are set
	relisting   atomic.Bool // a tools/list_changed re-list is running
	relistAgain atomic.Bool // another list_changed arrived meanwhile
	bg          sync.WaitGroup

	mu         sync.Mutex
	conn       transport
	closed     bool
	restarting bool
	restarts   int
	permanent  error // set when the server may not be restarted again
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Start spawns the server, runs the handshake (initialize, the initialized
// notification, tools/list across pages) within cfg's startup timeout and
// returns the running Client. Errors are *StartError naming the server and
// the phase, or wrap ErrInvalidConfig/ErrInvalidName for a config that is
// refused before anything is spawned. Clamp warnings are logged.
func Start(ctx context.Context, cfg ServerConfig) (*Client, error) {
	lim, err := cfg.Limits()
	if err != nil {
		return nil, &StartError{Server: cfg.Name, Phase: "config", Err: err}
	}
	base := cfg.Logger
	if base == nil {
		l := logrus.New()
		l.Out = io.Discard
		base = l
	}
	c := &Client{
		cfg: cfg,
		lim: lim,
		log: base.WithField("server", cfg.Name),
		validator: &artifacts.Validator{
			Roots:            append([]string(nil), cfg.ArtifactRoots...),
			MaxRefs:          cfg.MaxArtifactRefs,
			MaxArtifactBytes: cfg.MaxArtifactBytes,
		},
	}
	for _, w := range lim.Warnings {
		c.log.Warn(w)
	}
	cn, tools, info, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.conn, c.tools, c.info = cn, tools, info
	c.current.Store(newToolState(tools, tools))
	c.mu.Unlock()
	c.started.Store(true)
	if c.relistAgain.Load() {
		c.toolsChanged() // a list_changed arrived during the handshake
	}
	c.log.WithFields(logrus.Fields{"tools": len(tools), "protocol_version": info.ProtocolVersion}).Info("MCP server started")
	return c, nil
}

// Name returns the server's name.
func (c *Client) Name() string { return c.cfg.Name }

// Limits returns the effective limits.
func (c *Client) Limits() Limits { return c.lim }

// Info returns what the server said in initialize.
func (c *Client) Info() ServerInfo { return c.info }

// Tools returns the tools the server listed, in its order. The slice is a
// copy; the RawMessages are shared and must not be modified.
func (c *Client) Tools() []Tool { return append([]Tool(nil), c.tools...) }

// Restarts returns how many restarts were attempted.
func (c *Client) Restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts
}

// connect spawns one process and runs the handshake under the startup
// timeout. On failure the process is stopped.
func (c *Client) connect(ctx context.Context) (transport, []Tool, ServerInfo, error) {
	sctx, cancel := context.WithTimeout(ctx, c.lim.StartupTimeout)
	defer cancel()
	var cn transport
	if c.cfg.URL != "" {
		cn = newHTTPConn(c)
	} else {
		p, err := startProcess(&c.cfg)
		if err != nil {
			return nil, nil, ServerInfo{}, &StartError{Server: c.cfg.Name, Phase: "spawn", Err: err}
		}
		cn = newConn(c.cfg.Name, c.log, p, c.lim.MaxResponseBytes, c.lim.CloseGrace, c.lim.Timeout, c)
	}
	phase := "initialize"
	info, tools, err := c.handshake(sctx, cn, &phase)
	if err != nil {
		if sctx.Err() == context.DeadlineExceeded && ctx.Err() == nil || errors.Is(err, ErrTimeout) {
			err = fmt.Errorf("%w: no answer to %s within startup_timeout %s", ErrStartupTimeout, phase, c.lim.StartupTimeout)
		}
		cn.shutdown(context.Background(), fmt.Errorf("%w: start-up failed", ErrConnClosed))
		return nil, nil, ServerInfo{}, &StartError{Server: c.cfg.Name, Phase: phase, Err: err}
	}
	return cn, tools, info, nil
}

// request runs one protocol request with the time left before ctx's
// deadline (or the per-request timeout) and turns a JSON-RPC error into an
// *RPCError.
func (c *Client) request(ctx context.Context, cn transport, method string, params []byte, timeout time.Duration) (json.RawMessage, error) {
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	res, rpcErr, err := cn.request(ctx, method, params, timeout, "")
	if err == errConnDead {
		_, err = cn.terminal()
	}
	if err != nil {
		return nil, err
	}
	if rpcErr != nil {
		return nil, &RPCError{Server: c.cfg.Name, Method: method, Code: rpcErr.Code, Message: clipDisplay(rpcErr.Message, 512)}
	}
	return res, nil
}

func (c *Client) handshake(ctx context.Context, cn transport, phase *string) (ServerInfo, []Tool, error) {
	version := c.cfg.ClientVersion
	if version == "" {
		version = "dev"
	}
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": c.lim.ProtocolVersion,
		"capabilities":    c.clientCapabilities(),
		"clientInfo":      map[string]string{"name": "odek", "version": version},
	})
	raw, err := c.request(ctx, cn, "initialize", params, c.lim.StartupTimeout)
	if err != nil {
		return ServerInfo{}, nil, err
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(raw, &ir); err != nil {
		return ServerInfo{}, nil, fmt.Errorf("%w: initialize result does not decode: %v", ErrProtocol, err)
	}
	if err := CheckProtocolVersion(c.cfg.Name, ir.ProtocolVersion); err != nil {
		return ServerInfo{}, nil, err
	}
	info := ServerInfo{Name: ir.ServerInfo.Name, Version: ir.ServerInfo.Version, ProtocolVersion: ir.ProtocolVersion, Instructions: ir.Instructions}
	cn.negotiated(ir.ProtocolVersion)
	if err := cn.notify("notifications/initialized", nil); err != nil {
		return ServerInfo{}, nil, err
	}
	*phase = "tools/list"
	tools, err := c.listTools(ctx, cn)
	return info, tools, err
}

// listTools follows nextCursor for at most MaxToolPages pages and
// MaxTools tools, validating every tool.
func (c *Client) listTools(ctx context.Context, cn transport) ([]Tool, error) {
	var tools []Tool
	seen := make(map[string]bool)
	cursors := make(map[string]bool)
	var params []byte
	for page := 1; ; page++ {
		if page > MaxToolPages {
			return nil, fmt.Errorf("%w: server %q: more than %d tools/list pages", ErrTooManyTools, c.cfg.Name, MaxToolPages)
		}
		raw, err := c.request(ctx, cn, "tools/list", params, c.lim.StartupTimeout)
		if err != nil {
			return nil, err
		}
		var lr struct {
			Tools []struct {
				Name         string          `json:"name"`
				Title        string          `json:"title"`
				Description  string          `json:"description"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
				Annotations  json.RawMessage `json:"annotations"`
			} `json:"tools"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &lr); err != nil {
			return nil, fmt.Errorf("%w: tools/list result does not decode: %v", ErrProtocol, err)
		}
		if len(tools)+len(lr.Tools) > c.lim.MaxTools {
			return nil, fmt.Errorf("%w: server %q lists more than max_tools=%d (%d by page %d)", ErrTooManyTools, c.cfg.Name, c.lim.MaxTools, len(tools)+len(lr.Tools), page)
		}
		for _, t := range lr.Tools {
			if err := ValidateToolName(t.Name); err != nil {
				return nil, fmt.Errorf("server %q lists tool %q: %w", c.cfg.Name, clipDisplay(t.Name, 80), err)
			}
			if seen[t.Name] {
				return nil, fmt.Errorf("%w: server %q lists tool %q twice", ErrInvalidTool, c.cfg.Name, t.Name)
			}
			seen[t.Name] = true
			schema, err := compactObject(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("%w: server %q tool %q: inputSchema is not a JSON object", ErrInvalidTool, c.cfg.Name, t.Name)
			}
			ann := t.Annotations
			if bytes.Equal(bytes.TrimSpace(ann), []byte("null")) {
				ann = nil
			}
			var out json.RawMessage
			if o := bytes.TrimSpace(t.OutputSchema); len(o) > 0 && !bytes.Equal(o, []byte("null")) {
				if out, err = compactObject(o); err != nil {
					return nil, fmt.Errorf("%w: server %q tool %q: outputSchema is not a JSON object", ErrInvalidTool, c.cfg.Name, t.Name)
				}
			}
			tools = append(tools, Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema, Annotations: ann, OutputSchema: out})
		}
		if lr.NextCursor == nil || *lr.NextCursor == "" {
			return tools, nil
		}
		if cursors[*lr.NextCursor] {
			return nil, fmt.Errorf("%w: server %q repeated tools/list cursor on page %d", ErrProtocol, c.cfg.Name, page)
		}
		cursors[*lr.NextCursor] = true
		params, _ = json.Marshal(map[string]string{"cursor": *lr.NextCursor})
	}
}

// compactObject returns the compact form of a JSON object schema, or the
// empty object schema for none.
func compactObject(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	if t[0] != '{' {
		return nil, ErrInvalidTool
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fingerprint identifies a tool list (names, descriptions, schemas,
// annotations, in order).
func fingerprint(tools []Tool) [32]byte {
	h := sha256.New()
	for _, t := range tools {
		for _, part := range [][]byte{[]byte(t.Name), []byte(t.Title), []byte(t.Description), t.InputSchema, t.Annotations, t.OutputSchema} {
			var n [8]byte
			for i, l := 0, len(part); i < 8; i, l = i+1, l>>8 {
				n[i] = byte(l)
			}
			h.Write(n[:])
			h.Write(part)
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// restartBackoff is the wait before the nth restart, counted from when the
// connection closed: none for the first, then 1s, 2s, 4s, … capped at 30s.
func restartBackoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return backoff.Delay(n-1, time.Second, 30*time.Second, 0, 0)
}

// restartDecision decides what a call finds when the connection is closed:
// restart now (ok), or fail fast with the reason. Pure.
func restartDecision(restarts, max int, restarting bool, downFor time.Duration) (ok bool, why string) {
	switch {
	case restarting:
		return false, "another call is restarting it"
	case restarts >= max:
		return false, fmt.Sprintf("restart limit reached (%d of %d restarts used)", restarts, max)
	}
	if wait := restartBackoff(restarts + 1); downFor < wait {
		return false, fmt.Sprintf("next restart allowed in %s (backoff)", (wait - downFor).Round(time.Millisecond))
	}
	return true, ""
}

// live returns a usable connection, restarting the server when its
// connection closed and the restart policy allows it; otherwise it fails
// fast with ErrServerDown.
func (c *Client) live(ctx context.Context) (transport, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	cn := c.conn
	if cn.alive() {
		c.mu.Unlock()
		return cn, nil
	}
	deadAt, cause := cn.terminal()
	if c.permanent != nil {
		err := c.permanent
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: server %q is not restarted again: %w", ErrServerDown, c.cfg.Name, err)
	}
	ok, why := restartDecision(c.restarts, c.lim.MaxRestarts, c.restarting, time.Since(deadAt))
	if !ok {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: server %q: %s; it went down because: %w", ErrServerDown, c.cfg.Name, why, cause)
	}
	c.restarting = true
	c.restarts++
	attempt := c.restarts
	c.mu.Unlock()

	c.log.WithFields(logrus.Fields{"attempt": attempt, "max": c.lim.MaxRestarts, "cause": cause.Error()}).Warn("restarting MCP server")
	newConn, tools, info, err := c.connect(ctx)
	if err == nil && fingerprint(tools) != c.current.Load().fingerprint {
		newConn.shutdown(context.Background(), ErrToolsChanged)
		err = &StartError{Server: c.cfg.Name, Phase: "tools/list", Err: ErrToolsChanged}
	}

	c.mu.Lock()
	c.restarting = false
	if err == nil && c.closed {
		err = ErrClosed
		c.mu.Unlock()
		newConn.shutdown(context.Background(), ErrClosed)
		return nil, err
	}
	if err == nil {
		c.conn, c.info = newConn, info
	} else if errors.Is(err, ErrToolsChanged) {
		c.permanent = err
	}
	c.mu.Unlock()

	rep := RestartReport{Server: c.cfg.Name, Attempt: attempt, Max: c.lim.MaxRestarts, Cause: cause, Err: err}
	if err != nil {
		c.log.WithFields(logrus.Fields{"attempt": attempt, "error": err.Error()}).Error("MCP server restart failed")
	} else {
		c.log.WithField("attempt", attempt).Info("MCP server restarted")
	}
	if c.cfg.OnRestart != nil {
		c.cfg.OnRestart(rep)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: server %q: restart %d of %d failed: %w", ErrServerDown, c.cfg.Name, attempt, c.lim.MaxRestarts, err)
	}
	return newConn, nil
}

// Call invokes tool (the server's name for it) with args (a JSON object;
// empty or null for none). The per-call timeout is the config's Timeout:
// past it the call fails with a *TimeoutError, notifications/cancelled is
// sent and the server keeps running. A closed connection is restarted on
// the call when the restart policy allows; otherwise the call fails fast
// with ErrServerDown.
//
// A result (isError or not) and a JSON-RPC error answer are returned as a
// *ToolResult with a nil error. Every Go error is a *CallError naming
// server and tool: transport failures, timeouts, a malformed envelope
// (artifacts.ErrMalformedEnvelope) and artifact refs that fail validation
// (*artifacts.RefError with the ref's id and reason).
func (c *Client) Call(ctx context.Context, tool string, args json.RawMessage) (res *ToolResult, err error) {
	// telemetry (issue 24): the request is a client span under the tool
	// call's; its context goes to the server in params._meta (stdio and
	// HTTP) and, over Streamable HTTP, in the traceparent header too.
	ctx, span := telemetry.StartMCP(ctx, c.cfg.Name, "tools/call", tool)
	if span.Recording() {
		defer func() {
			if err != nil {
				span.Fail("mcp_error", err)
			} else if res != nil && res.IsError {
				span.Fail("tool_error", nil)
			}
			span.End()
		}()
	}
	return c.call(ctx, tool, args)
}

func (c *Client) call(ctx context.Context, tool string, args json.RawMessage) (*ToolResult, error) {
	if err := c.current.Load().callable(tool); err != nil {
		return nil, &CallError{Server: c.cfg.Name, Tool: clipDisplay(tool, 80), Err: err}
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 1<<20 {
			bufPool.Put(buf)
		}
	}()
	var token uint64
	if fn := progressFrom(ctx); fn != nil {
		token = c.watchProgress(fn)
		defer c.unwatchProgress(token)
	}
	if err := callParams(buf, tool, args, token, telemetry.ToMap(ctx)); err != nil {
		return nil, &CallError{Server: c.cfg.Name, Tool: tool, Err: err}
	}
	var raw json.RawMessage
	var rpcErr *wireError
	for attempt := 0; ; attempt++ {
		cn, err := c.live(ctx)
		if err != nil {
			return nil, &CallError{Server: c.cfg.Name, Tool: tool, Err: err}
		}
		raw, rpcErr, err = cn.request(ctx, "tools/call", buf.Bytes(), c.lim.Timeout, tool)
		if err == errConnDead && attempt == 0 {
			continue // closed between live() and sending: nothing was sent
		}
		if err == errConnDead {
			_, cause := cn.terminal()
			err = cause
		}
		if err == nil {
			break
		}
		return nil, &CallError{Server: c.cfg.Name, Tool: tool, Err: err}
	}
	if rpcErr != nil {
		return errorResult(c.cfg.Name, tool, rpcErr, c.lim.MaxResultChars), nil
	}
	var res callResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &CallError{Server: c.cfg.Name, Tool: tool, Err: fmt.Errorf("%w: tools/call result does not decode: %v", ErrProtocol, err)}
	}
	tr, err := renderResult(c.cfg.Name, tool, &res, c.lim.MaxResultChars, c.validator, c.cfg.URL != "")
	if err != nil {
		return nil, &CallError{Server: c.cfg.Name, Tool: tool, Err: err}
	}
	return tr, nil
}

// RootsChanged tells the server that the roots ServerConfig.Roots returns
// have changed (notifications/roots/list_changed); the server then asks
// roots/list again. It does nothing without Roots or while the connection
// is down.
func (c *Client) RootsChanged() error {
	if c.cfg.Roots == nil {
		return nil
	}
	c.mu.Lock()
	cn, closed := c.conn, c.closed
	c.mu.Unlock()
	if closed || !cn.alive() {
		return nil
	}
	return cn.notify("notifications/roots/list_changed", nil)
}

// Ping health-checks the current connection within the config's Timeout.
// It never restarts the server: a closed connection is ErrServerDown.
func (c *Client) Ping(ctx context.Context) error {
	c.mu.Lock()
	cn, closed := c.conn, c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if !cn.alive() {
		_, cause := cn.terminal()
		return fmt.Errorf("%w: server %q: %w", ErrServerDown, c.cfg.Name, cause)
	}
	_, err := c.request(ctx, cn, "ping", nil, c.lim.Timeout)
	return err
}

// Close stops the server: close its stdin, wait CloseGrace, SIGTERM its
// process group, wait CloseGrace, SIGKILL the group, and wait for the
// process and this Client's goroutines. Pending calls fail with
// ErrConnClosed. ctx shortens the waits (going straight to SIGKILL).
// Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cn := c.conn
	c.mu.Unlock()
	err := cn.shutdown(ctx, fmt.Errorf("%w: server %q: client closed", ErrConnClosed, c.cfg.Name))
	c.bg.Wait()
	return err
}
