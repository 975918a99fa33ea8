package agent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/odekrun/odek/internal/jsonwire"
)

// This file holds the JSON form of Message and ToolCall as session stores
// keep them: the OpenAI wire shape with Extra's members beside the known
// fields. odek's model client encodes requests with its own memoizing
// encoder; TestMessageJSONMatchesClient (internal/llm) keeps both forms
// byte-identical.

// Keys a Message or ToolCall encodes itself; an Extra member with one of
// these names is not sent (the known field wins).
var (
	messageKeys  = []string{"role", "content", "tool_calls", "tool_call_id", "name"}
	toolCallKeys = []string{"id", "type", "function"}
)

// MarshalJSON renders m in OpenAI wire shape with Extra's members added.
// An empty ToolCall.Type is written as "function".
func (m Message) MarshalJSON() ([]byte, error) {
	dst := append(make([]byte, 0, 64+len(m.Content)), `{"role":`...)
	dst = jsonwire.AppendString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = jsonwire.AppendString(dst, m.Content)
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendToolCall(dst, &m.ToolCalls[i]); err != nil {
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
	dst, err := appendExtra(dst, m.Extra, messageKeys, "message")
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// MarshalJSON renders c in OpenAI wire shape with Extra's members added.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	return appendToolCall(nil, &c)
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
// whose key is not in known, in extra's order, values compacted.
func appendExtra(dst []byte, extra json.RawMessage, known []string, what string) ([]byte, error) {
	if len(bytes.TrimSpace(extra)) == 0 {
		return dst, nil
	}
	dec := json.NewDecoder(bytes.NewReader(extra))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("agent: Extra of %s is not a JSON object", what)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("agent: Extra of %s: %v", what, err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("agent: Extra of %s: %v", what, err)
		}
		if jsonwire.IsOneOf(key, known) {
			continue
		}
		dst = append(dst, ',')
		dst = jsonwire.AppendString(dst, key)
		dst = append(dst, ':')
		var b bytes.Buffer
		if err := json.Compact(&b, val); err != nil {
			return nil, fmt.Errorf("agent: Extra of %s: %v", what, err)
		}
		dst = append(dst, b.Bytes()...)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("agent: Extra of %s: %v", what, err)
	}
	if dec.More() || dec.InputOffset() != int64(len(bytes.TrimRight(extra, " \t\r\n"))) {
		return nil, fmt.Errorf("agent: Extra of %s: data after the object", what)
	}
	return dst, nil
}

// UnmarshalJSON decodes the wire shape; content may be a string, null or
// an array of parts (their text is joined). Unknown non-null members go
// to Extra, sorted by key.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []ToolCall      `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	extra, err := jsonwire.CollectExtra(b, messageKeys, nil)
	if err != nil {
		return err
	}
	*m = Message{Role: w.Role, Content: jsonwire.ContentText(w.Content), ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID, Name: w.Name, Extra: extra}
	return nil
}

// UnmarshalJSON decodes a tool call; unknown non-null members go to Extra.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	extra, err := jsonwire.CollectExtra(b, toolCallKeys, []string{"index"})
	if err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Type: w.Type, Function: FunctionCall{Name: w.Function.Name, Arguments: jsonwire.ArgumentsText(w.Function.Arguments)}, Extra: extra}
	return nil
}
