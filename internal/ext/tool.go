package ext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/odekrun/odek/artifacts"
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
	qualified string
	server    string
	mcp       mcpclient.Tool
	class     tools.Class
	client    caller
	store     Registrar
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
	res, err := t.client.Call(ctx, t.mcp.Name, args)
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
