package host

import (
	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/redact"
)

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
