package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/odekrun/odek/internal/jsonwire"
)

// This file holds the request encoder's form of Message and ToolCall: a
// hand-written encoder (the request body is built from it, and
// encoding/json's reflection and Marshaler re-validation cost more than the
// rest of a call) and the helpers the response decoders use to keep
// unknown provider fields in Extra. The types' own MarshalJSON and
// UnmarshalJSON (session files) live with them in package agent;
// TestMessageJSONMatchesClient keeps both encodings byte-identical.

// Keys a Message or ToolCall encodes itself; an Extra member with one of
// these names is not sent (the known field wins).
var (
	messageKeys  = []string{"role", "content", "tool_calls", "tool_call_id", "name"}
	toolCallKeys = []string{"id", "type", "function"}
)

// outputOnly are fields of an assistant message that providers return but
// do not accept back: they are not kept in Extra.
var outputOnly = []string{"refusal", "annotations", "audio", "function_call", "provider_specific_fields", "parsed"}

// isOneOf reports whether k is one of keys, ignoring case: encoding/json
// matches struct fields case-insensitively, so an Extra member "Content"
// would come back from a session file as the content.
func isOneOf(k []byte, keys []string) bool {
	for _, s := range keys {
		if len(k) == len(s) && strings.EqualFold(string(k), s) {
			return true
		}
	}
	return false
}

// appendMessage appends the wire JSON of m to dst. An empty ToolCall.Type
// is sent as "function". Extra must be a JSON object (or empty).
func appendMessage(dst []byte, m *Message) ([]byte, error) {
	return appendMessageDrop(dst, m, nil)
}

// appendMessageDrop is appendMessage leaving out the Extra members named
// in drop.
func appendMessageDrop(dst []byte, m *Message, drop []string) ([]byte, error) {
	dst = append(dst, `{"role":`...)
	dst = jsonwire.AppendString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = jsonwire.AppendString(dst, m.Content)
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		noExtra := slices.Contains(drop, "*")
		for i := range m.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			c := &m.ToolCalls[i]
			if noExtra && len(c.Extra) > 0 {
				bare := *c
				bare.Extra = nil
				c = &bare
			}
			var err error
			if dst, err = appendToolCall(dst, c); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = jsonwire.AppendString(dst, m.ToolCallID)
	}
	if m.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = jsonwire.AppendString(dst, m.Name)
	}
	if slices.Contains(drop, "*") {
		return append(dst, '}'), nil
	}
	known := messageKeys
	if len(drop) > 0 {
		known = append(append([]string(nil), messageKeys...), drop...)
	}
	dst, err := appendExtra(dst, m.Extra, known, "message")
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

func appendToolCall(dst []byte, c *ToolCall) ([]byte, error) {
	typ := c.Type
	if typ == "" {
		typ = "function"
	}
	dst = append(dst, `{"id":`...)
	dst = jsonwire.AppendString(dst, c.ID)
	dst = append(dst, `,"type":`...)
	dst = jsonwire.AppendString(dst, typ)
	dst = append(dst, `,"function":{"name":`...)
	dst = jsonwire.AppendString(dst, c.Function.Name)
	dst = append(dst, `,"arguments":`...)
	dst = jsonwire.AppendString(dst, c.Function.Arguments)
	dst = append(dst, '}')
	dst, err := appendExtra(dst, c.Extra, toolCallKeys, "tool call "+c.ID)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// appendExtra appends ,"key":value for each member of the object extra
// whose key is not in known, values compacted.
func appendExtra(dst []byte, extra json.RawMessage, known []string, what string) ([]byte, error) {
	if len(bytes.TrimSpace(extra)) == 0 {
		return dst, nil
	}
	var s scanner
	s.b = extra
	if s.peek() != '{' {
		return nil, fmt.Errorf("%w: Extra of %s is not a JSON object", ErrInvalidRequest, what)
	}
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			break
		}
		keep := !isOneOf(key, known)
		s.ws()
		valStart := s.i
		s.skip()
		if s.err != nil {
			break
		}
		if keep {
			dst = append(dst, ',')
			dst = jsonwire.AppendString(dst, string(key))
			dst = append(dst, ':')
			dst = appendCompact(dst, extra[valStart:s.i])
		}
	}
	if s.err == nil {
		if s.ws(); s.i != len(s.b) {
			s.fail("data after the object")
		}
	}
	if s.err != nil {
		return nil, fmt.Errorf("%w: Extra of %s: %v", ErrInvalidRequest, what, s.err)
	}
	return dst, nil
}

// appendCompact appends validated JSON without insignificant whitespace.
func appendCompact(dst, v []byte) []byte {
	inStr := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inStr:
			dst = append(dst, c)
			if c == '\\' && i+1 < len(v) {
				i++
				dst = append(dst, v[i])
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			dst = append(dst, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// contentParts splits content sent as an array of parts: the text of
// "text" parts (and of parts without a type) is the answer; "thinking"
// parts (Mistral Magistral: {"type":"thinking","thinking":[{"type":"text",
// "text":…}]}) and "reasoning" parts are reasoning. Anything else (images,
// references) is ignored.
func contentParts(raw []byte) (text, thinking string) {
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", ""
	}
	var t, r []byte
	for _, p := range parts {
		switch p.Type {
		case "", "text", "output_text":
			t = append(t, p.Text...)
		case "thinking", "reasoning":
			r = append(r, p.Text...)
			if s, ok := jsonwire.StringValue(bytes.TrimSpace(p.Thinking)); ok {
				r = append(r, s...)
			} else {
				inner, _ := contentParts(p.Thinking)
				r = append(r, inner...)
			}
		}
	}
	return string(t), string(r)
}

// mergeElements joins the streamed pieces of an array-valued field such as
// OpenRouter's reasoning_details: consecutive object elements with the same
// "index" (and "type") are one element, their "text" and "summary" strings
// concatenated and their other members set by the latest non-empty value.
// Elements without an index are kept as they came.
func mergeElements(elems [][]byte) [][]byte {
	type obj struct {
		m    map[string]json.RawMessage
		keys []string
	}
	var out [][]byte
	var cur *obj
	var curIdx, curType string
	flush := func() {
		if cur == nil {
			return
		}
		b := []byte{'{'}
		for i, k := range cur.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwire.AppendString(b, k)
			b = append(b, ':')
			b = appendCompact(b, cur.m[k])
		}
		out = append(out, append(b, '}'))
		cur = nil
	}
	for _, e := range elems {
		var m map[string]json.RawMessage
		if e[0] != '{' || json.Unmarshal(e, &m) != nil || m["index"] == nil {
			flush()
			out = append(out, e)
			continue
		}
		idx, typ := string(m["index"]), string(m["type"])
		if cur == nil || idx != curIdx || typ != curType {
			flush()
			cur = &obj{m: map[string]json.RawMessage{}}
			curIdx, curType = idx, typ
			// Keep the member order of the first piece.
			var s scanner
			s.b = e
			s.objBegin()
			for first := true; ; first = false {
				k, ok := s.objNext(first)
				if !ok {
					break
				}
				cur.keys = append(cur.keys, string(k))
				s.skip()
			}
			for k, v := range m {
				cur.m[k] = v
			}
			continue
		}
		var added []string
		for k := range m {
			if _, had := cur.m[k]; !had {
				added = append(added, k)
			}
		}
		sort.Strings(added)
		cur.keys = append(cur.keys, added...)
		for k, v := range m {
			old, had := cur.m[k]
			a, aok := jsonwire.StringValue(bytes.TrimSpace(old))
			b, bok := jsonwire.StringValue(bytes.TrimSpace(v))
			switch {
			case (k == "text" || k == "summary") && aok && bok:
				cur.m[k] = jsonwire.AppendString(nil, a+b)
			case jsonwire.Empty(v) || bok && b == "":
				if !had {
					cur.m[k] = v
				}
			default:
				cur.m[k] = v
			}
		}
	}
	flush()
	return out
}
