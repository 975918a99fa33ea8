package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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
	URI      string      `json:"uri"`
	MimeType string      `json:"mimeType"`
	Text     boundedText `json:"text"`
	Blob     encodedLen  `json:"blob"`
}

// MaxInlineResourceChars is the longest embedded text resource (in code
// points) whose text is shown to the model, inside the result's untrusted
// boundary; a longer one keeps its one-line summary.
const MaxInlineResourceChars = 20000

// boundedText keeps a JSON string when it is short enough to inline
// (MaxInlineResourceChars code points) and only its size otherwise.
type boundedText struct {
	encodedLen
	text string
	kept bool
}

func (t *boundedText) UnmarshalJSON(b []byte) error {
	if err := t.encodedLen.UnmarshalJSON(b); err != nil || !t.present {
		return err
	}
	if t.raw > 6*MaxInlineResourceChars { // \uXXXX is 6 bytes per code point at most
		return nil
	}
	if err := json.Unmarshal(b, &t.text); err != nil {
		return err
	}
	if utf8.RuneCountInString(t.text) > MaxInlineResourceChars {
		t.text = ""
		return nil
	}
	t.kept = true
	return nil
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

// inlineResource renders an embedded text resource short enough to show:
// its summary line, saying the text follows, then the text (neutralised).
// ok is false when it is not such a resource.
func inlineResource(it *contentItem) (string, bool) {
	r := it.Resource
	if it.Type != "resource" || r == nil || !r.Text.kept || r.Blob.present {
		return "", false
	}
	line := strings.TrimSuffix(contentLine(it), " (content not shown)") + " (text follows)"
	return line + "\n" + artifacts.Neutralize(r.Text.text), true
}

// linkRef turns a resource_link into an artifact ref spec when it points
// at a file (file:// URI): odek then validates it like an envelope ref and,
// when it lies inside the server's artifact_roots, registers it for
// artifact_read. ok is false for other links.
func linkRef(it *contentItem, n int) (artifacts.RefSpec, bool) {
	if it.Type != "resource_link" || !strings.HasPrefix(strings.ToLower(it.URI), "file://") {
		return artifacts.RefSpec{}, false
	}
	id := it.Name
	if id == "" {
		id = uriName(it.URI)
	}
	if id == "" {
		id = "link-" + strconv.Itoa(n)
	}
	mt := it.MimeType
	if mt == "" {
		mt = "application/octet-stream"
	}
	return artifacts.RefSpec{Schema: artifacts.RefSchema, ID: id, URI: it.URI, MediaType: mt, SizeBytes: it.Size}, true
}

// structuredAdds reports whether structuredContent carries data the text
// items do not: it is a JSON value other than null and no text item is
// the same JSON value (the 2025-06-18 advice is to also send the
// serialised JSON as text; then it is not repeated).
func structuredAdds(sc json.RawMessage, content []contentItem) bool {
	t := bytes.TrimSpace(sc)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return false
	}
	var want any
	if json.Unmarshal(t, &want) != nil {
		return false
	}
	if m, ok := want.(map[string]any); ok && len(m) == 0 {
		return false
	}
	var text strings.Builder
	for i := range content {
		it := &content[i]
		if it.Type != "text" {
			continue
		}
		s := strings.TrimSpace(it.Text)
		text.WriteString(it.Text)
		text.WriteByte('\n')
		if s == "" || (s[0] != '{' && s[0] != '[') {
			continue
		}
		var got any
		if json.Unmarshal([]byte(s), &got) == nil && reflect.DeepEqual(got, want) {
			return false
		}
	}
	// Every value already in the text (a server that sends the same data
	// both ways, not as JSON): nothing to add.
	return !leavesIn(want, text.String())
}

// leavesIn reports whether every string and number in v occurs in text.
func leavesIn(v any, text string) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if !leavesIn(e, text) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !leavesIn(e, text) {
				return false
			}
		}
	case string:
		return containsWord(text, strings.TrimSpace(x))
	case float64:
		return strings.Contains(text, strconv.FormatFloat(x, 'f', -1, 64))
	}
	return true
}

// containsWord reports whether w occurs in text with no letter or digit
// right before or after it ("a" is not in "data").
func containsWord(text, w string) bool {
	if w == "" {
		return true
	}
	for from := 0; ; {
		i := strings.Index(text[from:], w)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(w):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		from = i + 1
	}
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// structuredLabel introduces the structured content in a result.
const structuredLabel = "[odek structured content] (JSON; data the text above does not carry)"

// ErrorFraming is the first line of an isError result: the model must
// not mistake the server's message for a success.
func ErrorFraming(server, tool string) string {
	return fmt.Sprintf("[odek tool error] server %s tool %s reported a failure (isError: true); its message follows:", artifacts.DisplayValue(server, 64), artifacts.DisplayValue(tool, 128))
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

// renderResult turns a decoded tools/call result into a ToolResult: an
// isError result opens with ErrorFraming, text items are joined by
// newlines (an envelope's text in place of its item), embedded text
// resources up to MaxInlineResourceChars are inlined, other non-text items
// summarised, structuredContent appended as compact JSON when it carries
// data the text does not, artifact refs validated (envelope refs fail the
// call; resource_links that do not validate keep their summary only), the
// whole cut to limit. remote marks a server reached over the network: its
// file:// refs are always rejected (its files are not this machine's).
// Errors name the cause; the caller adds server and tool.
func renderResult(server, tool string, res *callResult, limit int, v *artifacts.Validator, remote bool) (*ToolResult, error) {
	var body strings.Builder
	marks := 0 // code points Neutralize added to body
	var env *artifacts.Envelope
	var links []artifacts.RefSpec
	if res.IsError {
		body.WriteString(ErrorFraming(server, tool))
	}
	for i := range res.Content {
		it := &res.Content[i]
		if body.Len() > 0 {
			body.WriteByte('\n')
		}
		if it.Type != "text" {
			if s, ok := inlineResource(it); ok {
				marks += artifacts.Markers(it.Resource.Text.text)
				body.WriteString(s)
				continue
			}
			if spec, ok := linkRef(it, i); ok && !remote {
				links = append(links, spec)
			}
			body.WriteString(contentLine(it))
			continue
		}
		e, err := artifacts.ParseEnvelope(it.Text)
		if err != nil {
			return nil, err
		}
		if e == nil {
			marks += artifacts.Markers(it.Text)
			body.WriteString(artifacts.Neutralize(it.Text))
			continue
		}
		if env != nil {
			return nil, ErrMultipleEnvelopes
		}
		env = e
		marks += artifacts.Markers(e.Text)
		body.WriteString(artifacts.Neutralize(e.Text))
	}
	if structuredAdds(res.StructuredContent, res.Content) {
		var compact bytes.Buffer
		if json.Compact(&compact, res.StructuredContent) == nil {
			if body.Len() > 0 {
				body.WriteByte('\n')
			}
			if len(res.Content) > 0 {
				body.WriteString(structuredLabel)
				body.WriteByte('\n')
			}
			marks += artifacts.Markers(compact.String())
			body.WriteString(artifacts.Neutralize(compact.String()))
		}
	}
	var refs []artifacts.Ref
	if env != nil && len(env.Artifacts) > 0 {
		if remote {
			a := env.Artifacts[0]
			return nil, &artifacts.RefError{Index: 0, ID: clipDisplay(a.ID, artifacts.MaxIDChars), Err: artifacts.ErrOutsideRoots,
				Reason: "a remote (url) server's artifact refs are always rejected: its files are not on this machine"}
		}
		var err error
		if refs, err = v.Validate(env.Artifacts); err != nil {
			return nil, err
		}
	}
	refs = appendLinkRefs(refs, links, v)
	// The limit applies to the text as the server sent it (Neutralize's
	// marks do not count); the refs' metadata lines follow outside it.
	observed := utf8.RuneCountInString(body.String()) - marks
	text, cut := artifacts.Truncate(server, tool, body.String(), observed, artifacts.MetadataLines(refs), limit)
	return &ToolResult{
		Text:          text,
		IsError:       res.IsError,
		ArtifactCount: len(refs),
		Artifacts:     refs,
		Truncated:     cut,
		ObservedChars: observed,
	}, nil
}

// appendLinkRefs validates each resource_link on its own (one outside the
// roots does not fail the call: it only stays a summary) and appends those
// that pass, skipping ids already used.
func appendLinkRefs(refs []artifacts.Ref, links []artifacts.RefSpec, v *artifacts.Validator) []artifacts.Ref {
	if len(links) == 0 || len(v.Roots) == 0 {
		return refs
	}
	used := make(map[string]bool, len(refs))
	for _, r := range refs {
		used[r.ID] = true
	}
	for _, l := range links {
		if len(refs) >= v.RefLimit() {
			break // the rest stay summary lines: metadata lines are bounded by the ref limit
		}
		if used[l.ID] {
			continue
		}
		got, err := v.Validate([]artifacts.RefSpec{l})
		if err != nil {
			continue
		}
		used[l.ID] = true
		refs = append(refs, got...)
	}
	return refs
}

// errorResult renders a JSON-RPC error answer to tools/call as a tool
// error, subject to the same limit.
func errorResult(server, tool string, e *wireError, limit int) *ToolResult {
	body := "MCP error " + strconv.FormatInt(e.Code, 10) + ": " + artifacts.Neutralize(e.Message)
	observed := utf8.RuneCountInString(body) - artifacts.Markers(e.Message)
	text, cut := artifacts.Truncate(server, tool, body, observed, nil, limit)
	return &ToolResult{Text: text, IsError: true, Truncated: cut, ObservedChars: observed}
}
