package llm

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/odekrun/odek/internal/jsonwire"
)

// wireCall is a tool call of a non-streamed message.
type wireCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // a string; an object is tolerated
	} `json:"function"`
}

// wireBody is a non-streamed chat.completion (only what the client uses;
// unknown fields are ignored, except those of the message and its tool
// calls, which are read again for Extra).
type wireBody struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        *int            `json:"index"`
		FinishReason string          `json:"finish_reason"`
		Message      json.RawMessage `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int  `json:"prompt_tokens"`
		CompletionTokens    int  `json:"completion_tokens"`
		PromptCacheHit      *int `json:"prompt_cache_hit_tokens"`
		CacheRead           *int `json:"cache_read_input_tokens"`
		CacheCreation       *int `json:"cache_creation_input_tokens"`
		CachedTokens        *int `json:"cached_tokens"`
		PromptTokensDetails *struct {
			CachedTokens     *int `json:"cached_tokens"`
			CacheWriteTokens *int `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type wireMsg struct {
	Content          json.RawMessage   `json:"content"` // string, null, or content parts
	Refusal          string            `json:"refusal"`
	ReasoningContent string            `json:"reasoning_content"`
	Reasoning        string            `json:"reasoning"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
	FunctionCall     *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function_call"`
}

// decodeBody decodes a non-streamed reply (or a JSON reply to a streaming
// request) with the same rules as the stream assembler: content may be a
// string, null, or an array of parts (text joined, thinking parts to
// reasoning); a leading <think> block moves to reasoning unless keepThink;
// tool-call arguments may be a string or, tolerated, a JSON object; a
// legacy function_call is a tool call; ids stay empty when absent or
// repeated (the caller assigns synthetic ones); unknown members of the
// message and of each call go to Extra. A body with an "error" object
// yields an in-stream *APIError. Invalid JSON or a reply without choices
// is ErrMalformedResponse (retryable); a tool call cut off by a "length"
// finish is a *TruncatedToolCallError.
func decodeBody(data []byte, keepThink bool) (res *Response, retryable bool, err error) {
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
	var msg wireMsg
	if raw := bytes.TrimSpace(ch.Message); len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &msg); err != nil {
			return nil, true, malformedf("response message is not a chat message: %v", err)
		}
	}
	res = &Response{Model: w.Model, FinishReason: ch.FinishReason}
	res.Message.Role = RoleAssistant
	content, thinking := jsonwire.ContentText(msg.Content), ""
	if raw := bytes.TrimSpace(msg.Content); len(raw) > 0 && raw[0] == '[' {
		content, thinking = contentParts(raw)
	}
	var asm assembler
	if keepThink {
		asm.think = 2
	}
	asm.content = []byte(content + msg.Refusal)
	reasoning := msg.ReasoningContent
	if reasoning == "" {
		reasoning = msg.Reasoning // both: the same text twice
	}
	asm.reasoning = []byte(reasoning + thinking)
	if asm.think == 0 {
		asm.decideThink(true)
	}
	res.Message.Content = string(asm.content)
	res.Reasoning = string(asm.reasoning)
	if len(ch.Message) > 0 && ch.Message[0] == '{' {
		skip := append(append([]string(nil), messageKeys...), outputOnly...)
		if res.Message.Extra, err = jsonwire.CollectExtra(ch.Message, skip, nil); err != nil {
			return nil, true, malformedf("response message: %v", err)
		}
	}

	if n := len(msg.ToolCalls); n > MaxToolCalls {
		return nil, true, malformedf("%d tool calls in one response, more than %d (MaxToolCalls)", n, MaxToolCalls)
	}
	type indexed struct {
		i  int
		tc ToolCall
	}
	calls := make([]indexed, 0, len(msg.ToolCalls)+1)
	var names []string
	var rawArgs [][]byte
	for i, raw := range msg.ToolCalls {
		var tc wireCall
		if json.Unmarshal(raw, &tc) != nil {
			continue // not an object: ignored like any unknown shape
		}
		idx := i
		if tc.Index != nil {
			idx = *tc.Index
		}
		args := jsonwire.ArgumentsText(tc.Function.Arguments)
		if tc.ID == "" && tc.Function.Name == "" && args == "" {
			continue
		}
		extra, err := jsonwire.CollectExtra(raw, toolCallKeys, []string{"index"})
		if err != nil {
			continue
		}
		names, rawArgs = append(names, tc.Function.Name), append(rawArgs, []byte(args))
		calls = append(calls, indexed{idx, ToolCall{ID: tc.ID, Type: tc.Type, Extra: extra,
			Function: FunctionCall{Name: tc.Function.Name, Arguments: args}}})
	}
	// A legacy function_call is a call only when it names a function or
	// carries arguments: {"name":"","arguments":""} beside tool_calls (a
	// Claude model behind an OpenAI-compatible gateway sends it) is an
	// absent field, not a second, nameless call.
	if fc := msg.FunctionCall; fc != nil && (fc.Name != "" || strings.TrimSpace(jsonwire.ArgumentsText(fc.Arguments)) != "") {
		args := jsonwire.ArgumentsText(fc.Arguments)
		names, rawArgs = append(names, fc.Name), append(rawArgs, []byte(args))
		calls = append(calls, indexed{len(msg.ToolCalls), ToolCall{Function: FunctionCall{Name: fc.Name, Arguments: args}}})
	}
	if err := checkTruncated(ch.FinishReason, names, rawArgs); err != nil {
		return nil, false, err
	}
	sort.SliceStable(calls, func(a, b int) bool { return calls[a].i < calls[b].i })
	for _, c := range calls {
		res.Message.ToolCalls = append(res.Message.ToolCalls, c.tc)
	}
	finishCalls(res.Message.ToolCalls)
	if u := w.Usage; u != nil {
		v := usageView{ok: true, prompt: u.PromptTokens, completion: u.CompletionTokens, hasPrompt: true, hasCompl: true}
		v.cacheHit, v.hasCacheH = deref(u.PromptCacheHit)
		v.cacheRead, v.hasRead = deref(u.CacheRead)
		v.cacheNew, v.hasNew = deref(u.CacheCreation)
		v.topCached, v.hasTopCached = deref(u.CachedTokens)
		if d := u.PromptTokensDetails; d != nil {
			v.cached, v.hasCached = deref(d.CachedTokens)
			v.detailsWrite, v.hasDetailsWrite = deref(d.CacheWriteTokens)
		}
		res.Usage = v.usage()
	}
	return res, false, nil
}

// deref is *p and whether p was set.
func deref(p *int) (int, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}
