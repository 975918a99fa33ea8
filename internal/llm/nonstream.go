package llm

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// wireBody is a non-streamed chat.completion (only what the client uses;
// unknown fields are ignored).
type wireBody struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        *int   `json:"index"`
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content   json.RawMessage `json:"content"` // string, null, or content parts
			Refusal   string          `json:"refusal"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"` // a string; an object is tolerated
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int  `json:"prompt_tokens"`
		CompletionTokens    int  `json:"completion_tokens"`
		PromptCacheHit      *int `json:"prompt_cache_hit_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// decodeBody decodes a non-streamed reply (or a JSON reply to a streaming
// request). Content may be a string, null, or an array of content parts
// whose "text" values are concatenated; tool-call arguments may be a
// string or, tolerated, a JSON object. Reasoning fields are ignored. A
// body with an "error" object yields an in-stream *APIError. Invalid JSON
// or a reply without choices is ErrMalformedResponse (retryable).
func decodeBody(data []byte) (res *Response, retryable bool, err error) {
	var w wireBody
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, true, malformedf("response body is not a chat completion: %v", err)
	}
	if e := bytes.TrimSpace(w.Error); len(e) > 0 && !bytes.Equal(e, []byte("null")) {
		apiErr := parseErrorBody(data)
		retryable := classifyInStream(apiErr)
		return nil, retryable, apiErr
	}
	if len(w.Choices) == 0 {
		return nil, true, malformedf("response has no choices")
	}
	pick := 0
	for i, c := range w.Choices {
		if c.Index != nil && *c.Index == 0 {
			pick = i
			break
		}
	}
	ch := &w.Choices[pick]
	res = &Response{Model: w.Model, FinishReason: ch.FinishReason}
	res.Message.Role = RoleAssistant
	res.Message.Content = contentText(ch.Message.Content) + ch.Message.Refusal

	type indexed struct {
		i  int
		tc ToolCall
	}
	if n := len(ch.Message.ToolCalls); n > MaxToolCalls {
		return nil, true, malformedf("%d tool calls in one response, more than %d (MaxToolCalls)", n, MaxToolCalls)
	}
	calls := make([]indexed, 0, len(ch.Message.ToolCalls))
	for i, tc := range ch.Message.ToolCalls {
		idx := i
		if tc.Index != nil {
			idx = *tc.Index
		}
		args := argumentsText(tc.Function.Arguments)
		if tc.ID == "" && tc.Function.Name == "" && args == "" {
			continue
		}
		calls = append(calls, indexed{idx, ToolCall{ID: tc.ID, Type: tc.Type, Function: FunctionCall{Name: tc.Function.Name, Arguments: args}}})
	}
	sort.SliceStable(calls, func(a, b int) bool { return calls[a].i < calls[b].i })
	for _, c := range calls {
		tc := c.tc
		if tc.ID == "" {
			tc.ID = "call_" + strconv.Itoa(len(res.Message.ToolCalls))
		}
		if tc.Type == "" {
			tc.Type = "function"
		}
		if len(bytes.TrimSpace([]byte(tc.Function.Arguments))) == 0 {
			tc.Function.Arguments = "{}"
		}
		res.Message.ToolCalls = append(res.Message.ToolCalls, tc)
	}
	if u := w.Usage; u != nil {
		res.Usage = Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		switch {
		case u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens != nil:
			res.Usage.CachedTokens = *u.PromptTokensDetails.CachedTokens
		case u.PromptCacheHit != nil:
			res.Usage.CachedTokens = *u.PromptCacheHit
		}
	}
	return res, false, nil
}

// contentText renders message content: a string as is, null as "", an
// array of parts as the concatenation of their "text" fields.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if s, ok := jsonStringValue(raw); ok {
		return s
	}
	if len(raw) > 0 && raw[0] == '[' {
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			var b []byte
			for _, p := range parts {
				b = append(b, p.Text...)
			}
			return string(b)
		}
	}
	return ""
}

// jsonStringValue decodes raw (already trimmed) when it is a JSON string.
func jsonStringValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// argumentsText renders tool-call arguments: a JSON string as its value,
// an object or array as its JSON text, null as "".
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if s, ok := jsonStringValue(raw); ok {
		return s
	}
	if len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
		return string(raw)
	}
	return ""
}
