package host

import (
	"context"
	"sync"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/redact"
)

// redactDeltas puts on ctx, in place of the streamed-answer hook the caller
// installed (a worker's), one that passes every piece through red first: a
// redact.Stream per model attempt, so a secret split across deltas is
// masked too, holding back only text that may still become one. flush
// emits what the last attempt's stream holds; call it when the run
// returns. Without a hook on ctx it changes nothing.
func redactDeltas(ctx context.Context, red *redact.Redactor) (context.Context, func()) {
	out := llm.DeltaHookFrom(ctx)
	if out == nil || out.Delta == nil {
		return ctx, func() {}
	}
	var mu sync.Mutex // the hook's calls come from the model client's goroutine; flush from ours
	stream := red.NewStream(out.Delta)
	hook := &llm.DeltaHook{
		Begin: func() {
			mu.Lock()
			defer mu.Unlock()
			stream.Flush() // the previous attempt's tail belongs to it
			if out.Begin != nil {
				out.Begin()
			}
		},
		Delta: func(text string) {
			mu.Lock()
			defer mu.Unlock()
			stream.Write(text)
		},
	}
	return llm.WithDeltaHook(ctx, hook), func() {
		mu.Lock()
		defer mu.Unlock()
		stream.Flush()
	}
}

// redactMessages returns msgs with every text a person or a front end could
// read masked by red: contents, tool-call arguments. It copies only what
// changes; msgs is not modified.
func redactMessages(red *redact.Redactor, msgs []agent.Message) []agent.Message {
	var out []agent.Message
	for i := range msgs {
		m := msgs[i]
		changed := false
		if c := red.String(m.Content); c != m.Content {
			m.Content, changed = c, true
		}
		for j := range m.ToolCalls {
			if a := red.String(m.ToolCalls[j].Function.Arguments); a != m.ToolCalls[j].Function.Arguments {
				if &m.ToolCalls[0] == &msgs[i].ToolCalls[0] { // still shared with msgs
					m.ToolCalls = append([]agent.ToolCall(nil), m.ToolCalls...)
				}
				m.ToolCalls[j].Function.Arguments, changed = a, true
			}
		}
		if changed && out == nil {
			out = append(make([]agent.Message, 0, len(msgs)), msgs[:i]...)
		}
		if out != nil {
			out = append(out, m)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}
