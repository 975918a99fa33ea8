package agent

import (
	"strconv"

	"github.com/odekrun/odek/internal/clip"
)

// Context trimming keeps requests inside the model's context window when
// compaction (compact.go) cannot: its fallback when the digest side call
// fails or is turned off, and the survival cut after a provider's
// context-length error.
//
// A transcript is [system, history..., goal, groups...]. A group is an
// assistant message with tool calls plus every tool result that answers
// it, or one other message. Groups are dropped whole, oldest first, so no
// tool result is ever orphaned and no tool call is left unanswered.

// DefaultContextShare is the share of Config.ContextWindow a request may
// fill before proactive trimming starts.
const DefaultContextShare = 0.8

// survivalResultBytes caps each tool result in survival mode.
const survivalResultBytes = 8 << 10

// estimateTokens is a deliberately simple estimate: ~4 bytes per token
// plus a per-message overhead. It errs high for code and low for CJK text;
// the share below 1 leaves room for the error.
// Provider metadata (Message.Extra, ToolCall.Extra: reasoning the
// provider requires back) is sent with every request and counted too.
func estimateTokens(m *Message) int {
	n := len(m.Content) + len(m.ToolCallID) + len(m.Extra)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments) + len(c.Extra) + 8
	}
	return n/4 + 4
}

func estimateAll(msgs []Message) int {
	t := 0
	for i := range msgs {
		t += estimateTokens(&msgs[i])
	}
	return t
}

// groupStarts returns the start index of each group in msgs[from:].
func groupStarts(msgs []Message, from int) []int {
	var starts []int
	for i := from; i < len(msgs); {
		starts = append(starts, i)
		j := i + 1
		if len(msgs[i].ToolCalls) > 0 {
			for j < len(msgs) && msgs[j].Role == RoleTool {
				j++
			}
		}
		i = j
	}
	return starts
}

// anchorEnd is the index after the protected head: the system prompt and
// the first user message (the original goal).
func anchorEnd(msgs []Message) int {
	for i, m := range msgs {
		if i > 0 && m.Role == RoleUser {
			return i + 1
		}
	}
	return min(1, len(msgs))
}

// trimNote tells the model that history was dropped.
func trimNote(dropped int) Message {
	return Message{Role: RoleSystem, Content: "[odek: " + strconv.Itoa(dropped) +
		" earlier message groups were dropped to fit the context window; re-read files if you need their content]"}
}

// trimProactive drops the oldest groups after the anchor until the
// estimate fits maxTokens, always keeping the newest keep groups. It
// returns the new transcript and the number of groups dropped.
func trimProactive(msgs []Message, maxTokens, keep int) ([]Message, int) {
	if maxTokens <= 0 || estimateAll(msgs) <= maxTokens {
		return msgs, 0
	}
	head := anchorEnd(msgs)
	starts := groupStarts(msgs, head)
	total := estimateAll(msgs)
	note := trimNote(len(starts))
	total += estimateTokens(&note) // the note replaces what is dropped
	dropped, cut := 0, head
	for dropped < len(starts)-keep && total > maxTokens {
		end := len(msgs)
		if dropped+1 < len(starts) {
			end = starts[dropped+1]
		}
		total -= estimateAll(msgs[cut:end])
		cut = end
		dropped++
	}
	if dropped == 0 {
		return msgs, 0
	}
	out := make([]Message, 0, head+1+len(msgs)-cut)
	out = append(out, msgs[:head]...)
	out = append(out, trimNote(dropped))
	out = append(out, msgs[cut:]...)
	return out, dropped
}

// trimSurvival is the last resort after the provider rejected the request
// as too long: keep the head, the last two groups and the last user
// message, and cut every tool result to survivalResultBytes.
func trimSurvival(msgs []Message) ([]Message, int, int) {
	head := anchorEnd(msgs)
	starts := groupStarts(msgs, head)
	keepFrom := len(msgs)
	if n := len(starts); n > 0 {
		keepFrom = starts[max(0, n-2)]
	}
	dropped := 0
	for _, s := range starts {
		if s < keepFrom {
			dropped++
		}
	}
	out := make([]Message, 0, head+2+len(msgs)-keepFrom)
	out = append(out, msgs[:head]...)
	if dropped > 0 {
		out = append(out, trimNote(dropped))
	}
	// The last user message, when it lies in a dropped group, is kept too.
	lastUser := -1
	for i := len(msgs) - 1; i >= head; i-- {
		if msgs[i].Role == RoleUser {
			lastUser = i
			break
		}
	}
	if lastUser >= head && lastUser < keepFrom {
		out = append(out, msgs[lastUser])
	}
	out = append(out, msgs[keepFrom:]...)
	truncated := 0
	for i := head; i < len(out); i++ {
		if out[i].Role == RoleTool && len(out[i].Content) > survivalResultBytes {
			out[i].Content = clip.Text(out[i].Content, survivalResultBytes)
			truncated++
		}
	}
	return out, dropped, truncated
}

// KeepRecent trims a stored conversation (without the system prompt, as in
// Result.Messages and sessions) to the first user goal plus the newest
// groups message groups, inserting a note about what was dropped. Tool
// results are never orphaned. It returns the messages and the number of
// groups dropped.
func KeepRecent(msgs []Message, groups int) ([]Message, int) {
	withSys := append([]Message{{Role: RoleSystem}}, msgs...)
	head := anchorEnd(withSys)
	starts := groupStarts(withSys, head)
	if groups < 0 {
		groups = 0
	}
	if len(starts) <= groups {
		return msgs, 0
	}
	dropped := len(starts) - groups
	cut := len(withSys)
	if groups > 0 {
		cut = starts[dropped]
	}
	out := make([]Message, 0, head+len(withSys)-cut)
	out = append(out, withSys[1:head]...)
	out = append(out, trimNote(dropped))
	out = append(out, withSys[cut:]...)
	return out, dropped
}
