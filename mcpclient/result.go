package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/odekrun/odek/artifacts"
)

// ToolResult is the outcome of one tools/call, ready for the model.
type ToolResult struct {
	// Text is the rendered result: the server's text (neutralised so it
	// cannot imitate odek's lines), one "[odek content]" line per non-text
	// item, one "[odek artifact]" line per validated artifact, cut to
	// max_result_chars with the contract's notice. It is not yet wrapped
	// as untrusted content: the agent does that (artifacts.WrapUntrusted).
	Text string
	// IsError marks a tool error: the server's isError result or a
	// JSON-RPC error answer (Text then holds "MCP error <code>: <message>").
	IsError bool
	// ArtifactCount is len(Artifacts), for tool_call_completed.
	ArtifactCount int
	// Artifacts are the validated refs, with resolved paths for a later
	// artifact_read. Never show Path to the model.
	Artifacts []artifacts.Ref
	// Truncated reports that Text was cut; ObservedChars is the code-point
	// count before the cut.
	Truncated     bool
	ObservedChars int
}

// callResult is the tools/call result odek reads. Unknown fields ignored.
type callResult struct {
	Content           []contentItem   `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

type contentItem struct {
	Type     string       `json:"type"`
	Text     string       `json:"text"`
	Data     encodedLen   `json:"data"`
	MimeType string       `json:"mimeType"`
	URI      string       `json:"uri"`
	Name     string       `json:"name"`
	Size     *int64       `json:"size"`
	Resource *resourceObj `json:"resource"`
}

type resourceObj struct {
	URI      string     `json:"uri"`
	MimeType string     `json:"mimeType"`
	Text     encodedLen `json:"text"`
	Blob     encodedLen `json:"blob"`
}

// encodedLen records the size of a JSON string without keeping it: the
// raw length, how many '=' end it (base64 padding) and whether it was a
// string at all. Content is never kept.
type encodedLen struct {
	raw     int
	pad     int
	present bool
}

func (e *encodedLen) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' {
		return fmt.Errorf("not a string")
	}
	e.present, e.raw = true, len(b)-2
	for i := len(b) - 2; i > 0 && e.pad < 2 && b[i] == '='; i-- {
		e.pad++
	}
	return nil
}

// base64Bytes is the decoded size of base64 text of raw characters: exact
// for padded or unpadded base64 without JSON escapes (an escaped "\/"
// counts one byte too many).
func (e encodedLen) base64Bytes() int64 {
	n := int64(e.raw)
	return n/4*3 + max(n%4-1, 0) - int64(e.pad)
}

// contentLine summarises one non-text content item in one line; content
// is never included.
func contentLine(it *contentItem) string {
	var b strings.Builder
	b.WriteString("[odek content] type=")
	b.WriteString(artifacts.DisplayValue(it.Type, 32))
	mime, name := it.MimeType, ""
	size := int64(-1)
	switch it.Type {
	case "image", "audio":
		if it.Data.present {
			size = it.Data.base64Bytes()
		}
	case "resource":
		if r := it.Resource; r != nil {
			mime, name = r.MimeType, uriName(r.URI)
			switch {
			case r.Blob.present:
				size = r.Blob.base64Bytes()
			case r.Text.present:
				size = int64(r.Text.raw)
			}
		}
	case "resource_link":
		name = it.Name
		if name == "" {
			name = uriName(it.URI)
		}
		if it.Size != nil {
			size = *it.Size
		}
	}
	if mime != "" {
		b.WriteString(" media_type=")
		b.WriteString(artifacts.DisplayValue(mime, 64))
	}
	if name != "" {
		b.WriteString(" name=")
		b.WriteString(artifacts.DisplayValue(name, 80))
	}
	if size >= 0 {
		b.WriteString(" size_bytes=")
		b.WriteString(strconv.FormatInt(size, 10))
	}
	b.WriteString(" (content not shown)")
	return b.String()
}

// uriName is the last path segment of a URI, for display.
func uriName(uri string) string {
	u := uri
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	u = strings.TrimRight(u, "/")
	if i := strings.LastIndexByte(u, '/'); i >= 0 {
		u = u[i+1:]
	}
	return u
}

// renderResult turns a decoded tools/call result into a ToolResult: text
// items joined by newlines (an envelope's text in place of its item),
// non-text items summarised, artifact refs validated, the whole cut to
// limit. Errors name the cause; the caller adds server and tool.
func renderResult(server, tool string, res *callResult, limit int, v *artifacts.Validator) (*ToolResult, error) {
	var body strings.Builder
	var env *artifacts.Envelope
	for i := range res.Content {
		it := &res.Content[i]
		if i > 0 {
			body.WriteByte('\n')
		}
		if it.Type != "text" {
			body.WriteString(contentLine(it))
			continue
		}
		e, err := artifacts.ParseEnvelope(it.Text)
		if err != nil {
			return nil, err
		}
		if e == nil {
			body.WriteString(artifacts.Neutralize(it.Text))
			continue
		}
		if env != nil {
			return nil, ErrMultipleEnvelopes
		}
		env = e
		body.WriteString(artifacts.Neutralize(e.Text))
	}
	if len(res.Content) == 0 && len(res.StructuredContent) > 0 && !bytes.Equal(res.StructuredContent, []byte("null")) {
		body.WriteString(artifacts.Neutralize(string(res.StructuredContent)))
	}
	var refs []artifacts.Ref
	if env != nil && len(env.Artifacts) > 0 {
		var err error
		if refs, err = v.Validate(env.Artifacts); err != nil {
			return nil, err
		}
	}
	text, observed, cut := artifacts.Truncate(server, tool, body.String(), artifacts.MetadataLines(refs), limit)
	return &ToolResult{
		Text:          text,
		IsError:       res.IsError,
		ArtifactCount: len(refs),
		Artifacts:     refs,
		Truncated:     cut,
		ObservedChars: observed,
	}, nil
}

// errorResult renders a JSON-RPC error answer to tools/call as a tool
// error, subject to the same limit.
func errorResult(server, tool string, e *wireError, limit int) *ToolResult {
	body := "MCP error " + strconv.FormatInt(e.Code, 10) + ": " + artifacts.Neutralize(e.Message)
	text, observed, cut := artifacts.Truncate(server, tool, body, nil, limit)
	return &ToolResult{Text: text, IsError: true, Truncated: cut, ObservedChars: observed}
}
