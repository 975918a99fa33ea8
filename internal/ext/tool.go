package ext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient"
)

// caller is the part of *mcpclient.Client a Tool needs.
type caller interface {
	Call(ctx context.Context, tool string, args json.RawMessage) (*mcpclient.ToolResult, error)
}

// Tool is one MCP tool adapted to tools.Tool. It is safe for concurrent
// use.
type Tool struct {
	qualified  string
	server     string
	mcp        mcpclient.Tool
	class      tools.Class
	client     caller
	store      Registrar
	onProgress func(ToolProgress)
	emit       func(context.Context, events.Type, map[string]any)
	// notices are the tool-list changes of the Set's servers; seen is how
	// many of them this Tool's group (one Load, or one ToolsFor) has told
	// its model about.
	notices *noticeBoard
	seen    *atomic.Int64
}

// Registrar keeps validated artifact refs for later reading by id
// (*artifactstore.Store). Register must refuse an id it already holds
// for a different file.
type Registrar interface {
	Register(ref artifacts.Ref) error
}

// maxIDSuffix bounds the "#n" suffixes tried when a server reuses an
// artifact id across calls.
const maxIDSuffix = 99

var _ tools.Tool = (*Tool)(nil)

// Server and MCPName return the server and the server's name of the tool.
func (t *Tool) Server() string  { return t.server }
func (t *Tool) MCPName() string { return t.mcp.Name }

// MaxDescriptionChars bounds the part of a tool's description the model
// sees, in code points; the approval prompt shows exactly that part, so
// nothing the operator was not shown reaches the model through it.
const MaxDescriptionChars = 2000

// Definition is the tool as the model sees it: the qualified name, the
// server's description (at most MaxDescriptionChars) after a one-line
// origin note, and the server's input schema.
func (t *Tool) Definition() tools.Definition {
	desc := fmt.Sprintf("[MCP server %q, tool %q] %s", t.server, t.mcp.Name, clipRunes(t.mcp.Description, MaxDescriptionChars))
	return tools.Definition{Name: t.qualified, Description: desc, Parameters: t.mcp.InputSchema}
}

// Assess classifies every call with the server's danger class; the
// summary names the server and the tool (never argument values). Arguments
// that are not a JSON object are an error.
func (t *Tool) Assess(args json.RawMessage) (tools.Assessment, error) {
	a := bytes.TrimSpace(args)
	if len(a) > 0 && !bytes.Equal(a, []byte("null")) && a[0] != '{' {
		return tools.Assessment{}, fmt.Errorf("arguments of %s must be a JSON object", t.qualified)
	}
	return tools.Assessment{Class: t.class, Summary: map[string]any{"server": t.server, "mcp_tool": t.mcp.Name}}, nil
}

// Run calls the tool. The result — text, content summaries and artifact
// metadata lines as rendered by mcpclient — reaches the model inside an
// artifacts.WrapUntrusted boundary; so does a tool error (isError, a
// JSON-RPC error answer) and any failure whose text involves what the
// server sent (a rejected artifact ref, a malformed envelope, a protocol
// violation). A cancelled ctx and a timeout are Go errors, so the agent
// classifies them (context_canceled, deadline_exceeded).
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	ctx = mcpclient.WithProgress(ctx, t.progressFunc(ctx))
	res, err := t.client.Call(ctx, t.mcp.Name, args)
	r, err := t.result(ctx, res, err)
	if err == nil {
		if n := t.pendingNotices(); n != "" {
			r.Text += n
		}
	}
	return r, err
}

// result turns Call's outcome into the tool result.
func (t *Tool) result(ctx context.Context, res *mcpclient.ToolResult, err error) (tools.Result, error) {
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, err
		}
		if errors.Is(err, mcpclient.ErrTimeout) {
			return tools.Result{}, err
		}
		return tools.Result{IsError: true, Text: artifacts.WrapUntrusted(t.qualified, err.Error())}, nil
	}
	text := artifacts.WrapUntrusted(t.qualified, res.Text)
	if ids := t.register(res.Artifacts); ids != "" {
		// Outside the boundary: odek wrote this line, not the server.
		text += "\n[odek] read these artifacts with artifact_read: " + ids
	}
	return tools.Result{
		Text:          text,
		IsError:       res.IsError,
		ArtifactCount: res.ArtifactCount,
	}, nil
}

// register files refs under "<server>/<id>" (with "#2", "#3", … when a
// server reuses an id for another file) and returns the mapping as
// `id → read-id` pairs; "" when nothing was registered.
func (t *Tool) register(refs []artifacts.Ref) string {
	if t.store == nil || len(refs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, ref := range refs {
		shown := ref.ID
		base := t.server + "/" + ref.ID
		for n := 1; n <= maxIDSuffix; n++ {
			ref.ID = base
			if n > 1 {
				ref.ID = fmt.Sprintf("%s#%d", base, n)
			}
			if err := t.store.Register(ref); err == nil {
				if b.Len() > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s → %s", shown, ref.ID)
				break
			} else if !errors.Is(err, artifactstore.ErrDuplicateID) {
				break
			}
		}
	}
	return b.String()
}

// clipRunes returns at most n code points of s.
func clipRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// ProgressInterval is the least time between two progress signals of one
// call (a server may send hundreds a second).
const ProgressInterval = 250 * time.Millisecond

// ToolProgress is one progress signal of a running MCP tool call, for
// Options.OnProgress (the Telegram status, odek run's stderr).
type ToolProgress struct {
	// Tool is the qualified name the model called; Server and MCPTool
	// the server's names.
	Tool, Server, MCPTool string
	// Progress and Total are the server's values (Total 0 ⇒ unknown).
	Progress, Total float64
	// Message is the server's message (untrusted, cleaned, ≤ 200 chars).
	Message string
}

// EventType is events.ToolCallProgress (ToolProgress is an events.Payload);
// at most one per call every ProgressInterval.
func (ToolProgress) EventType() events.Type { return events.ToolCallProgress }

// Decode reads event data back (see events.Payload); unknown fields are
// ignored.
func (p *ToolProgress) Decode(m map[string]any) {
	*p = ToolProgress{Progress: events.Float(m["progress"]), Total: events.Float(m["total"])}
	p.Tool, _ = m["tool"].(string)
	p.Server, _ = m["server"].(string)
	p.MCPTool, _ = m["mcp_tool"].(string)
	p.Message, _ = m["message"].(string)
}

// Data is the progress as event data.
func (p ToolProgress) Data() map[string]any {
	d := map[string]any{"tool": p.Tool, "server": p.Server, "mcp_tool": p.MCPTool, "progress": p.Progress}
	if p.Total > 0 {
		d["total"] = p.Total
	}
	if p.Message != "" {
		d["message"] = p.Message
	}
	return d
}

// progressFunc returns the callback of one call: rate limited to one
// signal per ProgressInterval, emitted as an event of the run ctx belongs
// to (Options.Emit) and passed to Options.OnProgress.
func (t *Tool) progressFunc(ctx context.Context) func(mcpclient.Progress) {
	var mu sync.Mutex
	var last time.Time
	return func(p mcpclient.Progress) {
		mu.Lock()
		if !last.IsZero() && p.At.Sub(last) < ProgressInterval {
			mu.Unlock()
			return
		}
		last = p.At
		mu.Unlock()
		tp := ToolProgress{Tool: t.qualified, Server: t.server, MCPTool: t.mcp.Name, Progress: p.Progress, Total: p.Total, Message: p.Message}
		if t.emit != nil {
			t.emit(ctx, events.ToolCallProgress, tp.Data())
		}
		if t.onProgress != nil {
			t.onProgress(tp)
		}
	}
}

// noticeBoard collects the tool-list changes of a Set's servers, in order.
type noticeBoard struct {
	mu    sync.Mutex
	lines []string
}

func (b *noticeBoard) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	b.mu.Unlock()
}

// since returns the lines after the first n and the new count.
func (b *noticeBoard) since(n int64) ([]string, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if int64(len(b.lines)) <= n {
		return nil, n
	}
	return append([]string(nil), b.lines[n:]...), int64(len(b.lines))
}

// pendingNotices renders the changes this Tool's group has not told its
// model yet, outside the untrusted boundary (odek writes them; the names
// in them passed the tool-name rules), and marks them told.
func (t *Tool) pendingNotices() string {
	if t.notices == nil || t.seen == nil {
		return ""
	}
	for {
		seen := t.seen.Load()
		lines, n := t.notices.since(seen)
		if len(lines) == 0 {
			return ""
		}
		if !t.seen.CompareAndSwap(seen, n) {
			continue // another call of the group told them
		}
		var b strings.Builder
		for _, l := range lines {
			b.WriteString("\n[odek] ")
			b.WriteString(l)
			b.WriteString(". Tools that are not available fail when called; do not rely on them.")
		}
		return b.String()
	}
}
