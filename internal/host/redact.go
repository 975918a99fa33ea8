package host

import (
	"context"

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

// Compact folds a saved conversation's oldest groups into a digest
// (agent.Compact) outside a run — `odek session compact`, the bot's
// /compact — and masks what it returns as a run masks its saved session:
// the digest is model output and may repeat a secret the conversation
// showed the model. The redactor knows the endpoint's key (cfgKey) and
// the secrets named in environ (nil: none). On an error the conversation
// comes back unchanged, as agent.Compact returns it.
func Compact(ctx context.Context, m agent.Model, model string, msgs []agent.Message, keep int, cfgKey string, environ []string) ([]agent.Message, agent.Compaction, error) {
	out, c, err := agent.Compact(ctx, m, model, msgs, keep)
	if err != nil {
		return out, c, err
	}
	red := redact.New()
	red.AddValue(cfgKey)
	if environ != nil {
		red.AddFromEnv(environ)
	}
	return redactMessages(red, out), c, nil
}
