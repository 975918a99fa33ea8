package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/clip"
)

// Compaction keeps a long conversation inside the model's context window
// without losing it, and without rewriting the start of every request (a
// provider's prompt cache serves a request's longest prefix seen before;
// dropping one group per call would change that prefix every time).
//
// When the next request would pass the high-water mark (ContextShare of
// the window), the oldest message groups are folded, once, into one
// digest message written by a side call to the same model (DigestPrompt),
// until the estimate is under the low-water mark (ContextLowShare). The
// transcript is then
//
//	[system, goal, digest, (current user message), kept groups...]
//
// The system prompt and the first user message (the goal) stay verbatim;
// a digest already there is folded into the new one; the newest keep
// groups and the current user message stay verbatim; groups are folded
// whole, so a tool call is never separated from its results. The plan
// is not in the transcript (it is appended to each request) and the
// session's external-state refs are session data outside it, so neither
// can be folded. Between compactions nothing before the newest message
// changes: the history is append-only and every unchanged message keeps
// its bytes.
//
// A side call that fails (or a budget that cannot pay for it) falls back
// to dropping the same groups with a note (context_trimmed, mode
// "proactive"); the run goes on.

// DefaultContextLowShare is the share of the window a compaction brings
// the conversation down to when Config.ContextLowShare is 0.
const DefaultContextLowShare = 0.3

// DigestMarker starts the content of the digest message; a message of
// role system starting with it is the conversation's digest.
const DigestMarker = "[odek: digest of the earlier conversation]"

// DigestPrompt is the side call's system prompt (docs/SESSIONS.md quotes
// it).
const DigestPrompt = `You keep the memory of a long conversation between a user and an AI agent that uses tools.
You are given the previous digest (if any) and the oldest part of the conversation, which is about to be removed from the agent's context.
Write a new digest that replaces both. Keep, as short bullet points under these headings:
## Facts — what the user said about themselves, their project and the world, and what the tools found out;
## Decisions — what was decided and why;
## Files and paths — every file, directory, URL, id and command that mattered, verbatim;
## Open tasks — what was asked and is not done yet;
## User preferences — how the user wants things done.
Copy names, numbers, paths and identifiers exactly. Drop greetings, chatter and tool output that is no longer needed.
Never invent anything. Reply with the digest only.`

// digestMaxBytes bounds the digest kept in the transcript; digestMinTokens
// is what a compaction plans for it.
const (
	digestMaxBytes       = 16 << 10
	digestPlanTokens     = 1500
	sideCallResultBytes  = 2 << 10 // each tool result shown to the side call
	sideCallMinFoldBytes = 4 << 10
)

// IsDigest reports whether m is the conversation's digest message.
func IsDigest(m *Message) bool {
	return m.Role == RoleSystem && strings.HasPrefix(m.Content, DigestMarker)
}

// digestMessage wraps the side call's text as the digest message.
func digestMessage(text string) Message {
	return Message{Role: RoleSystem, Content: DigestMarker + "\n" + clip.Text(strings.TrimSpace(text), digestMaxBytes)}
}

// compactPlan is what planCompaction decided: msgs[:head] stay, the
// digest at msgs[digest] (when >= 0) and the groups in msgs[from:cut] are
// folded, msgs[lastUser] is kept verbatim when it lies in the folded
// range (lastUser >= 0), and msgs[cut:] stay.
type compactPlan struct {
	head, digest, from, cut, lastUser int
	folded                            int // groups in msgs[from:cut]
	before, after                     int // estimated tokens
}

// planCompaction decides a compaction of msgs (system prompt first) when
// their estimate is above high: fold the oldest groups after the head
// (and the digest) until the estimate, with a new digest of
// digestPlanTokens, is at most low, keeping the newest keep groups. ok is
// false when the estimate is not above high or nothing can be folded.
func planCompaction(msgs []Message, high, low, keep int) (p compactPlan, ok bool) {
	total := estimateAll(msgs)
	if high <= 0 || total <= high {
		return compactPlan{}, false
	}
	p = compactPlan{head: anchorEnd(msgs), digest: -1, lastUser: -1, before: total}
	p.from = p.head
	if p.from < len(msgs) && IsDigest(&msgs[p.from]) {
		p.digest = p.from
		p.from++
	}
	starts := groupStarts(msgs, p.from)
	foldable := len(starts) - max(keep, 1)
	if foldable <= 0 {
		return compactPlan{}, false
	}
	last := -1
	for i := len(msgs) - 1; i >= p.from; i-- {
		if msgs[i].Role == RoleUser {
			last = i
			break
		}
	}
	after := total + digestPlanTokens
	if p.digest >= 0 {
		after -= estimateTokens(&msgs[p.digest])
	}
	p.cut = p.from
	for p.folded < foldable && after > low {
		end := len(msgs)
		if p.folded+1 < len(starts) {
			end = starts[p.folded+1]
		}
		after -= estimateAll(msgs[p.cut:end])
		p.cut = end
		p.folded++
	}
	if last >= p.from && last < p.cut {
		p.lastUser = last
		after += estimateTokens(&msgs[last])
	}
	p.after = after
	return p, true
}

// apply builds the compacted transcript with digest d.
func (p compactPlan) apply(msgs []Message, d Message) []Message {
	out := make([]Message, 0, p.head+2+len(msgs)-p.cut)
	out = append(out, msgs[:p.head]...)
	out = append(out, d)
	if p.lastUser >= 0 {
		out = append(out, msgs[p.lastUser])
	}
	return append(out, msgs[p.cut:]...)
}

// applyTrim is apply without a new digest: the folded groups are dropped
// with a note, and a digest already there stays.
func (p compactPlan) applyTrim(msgs []Message) []Message {
	out := make([]Message, 0, p.head+3+len(msgs)-p.cut)
	out = append(out, msgs[:p.head]...)
	if p.digest >= 0 {
		out = append(out, msgs[p.digest])
	}
	out = append(out, trimNote(p.folded))
	if p.lastUser >= 0 {
		out = append(out, msgs[p.lastUser])
	}
	return append(out, msgs[p.cut:]...)
}

// sideCallInput renders the previous digest and the folded messages as
// the side call's user message, each tool result and call clipped to
// sideCallResultBytes, each assistant text to twice that, user messages
// whole, and the whole to maxBytes (its middle cut).
func (p compactPlan) sideCallInput(msgs []Message, maxBytes int) string {
	var b strings.Builder
	if p.digest >= 0 {
		b.WriteString("# Previous digest\n")
		b.WriteString(strings.TrimSpace(strings.TrimPrefix(msgs[p.digest].Content, DigestMarker)))
		b.WriteString("\n\n")
	}
	b.WriteString("# Conversation to fold into the digest\n")
	for i := p.from; i < p.cut; i++ {
		m := &msgs[i]
		switch m.Role {
		case RoleTool:
			fmt.Fprintf(&b, "\n[tool result %s]\n%s\n", m.ToolCallID, clip.Text(m.Content, sideCallResultBytes))
		case RoleAssistant:
			b.WriteString("\n[assistant]\n")
			if m.Content != "" {
				b.WriteString(clip.Text(m.Content, 2*sideCallResultBytes))
				b.WriteByte('\n')
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "(calls %s %s, id %s)\n", c.Function.Name, clip.Text(c.Function.Arguments, sideCallResultBytes), c.ID)
			}
		default:
			fmt.Fprintf(&b, "\n[%s]\n%s\n", m.Role, m.Content)
		}
	}
	s := b.String()
	if maxBytes > 0 && len(s) > maxBytes {
		s = clip.Text(s, maxBytes)
	}
	return s
}

// Compaction reports one compaction (Compact's result and the
// context_compacted event).
type Compaction struct {
	BeforeTokens, AfterTokens int   // estimated tokens of the transcript
	FoldedGroups              int   // groups the digest replaced
	Usage                     Usage // the side call's
}

// ErrNothingToCompact is returned by Compact when the conversation has no
// group that may be folded.
var ErrNothingToCompact = errors.New("agent: nothing to compact")

// Compact folds the oldest groups of a stored conversation (without the
// system prompt, as sessions keep it) into a digest written by model,
// keeping the newest keep groups (at least 1) and the current user
// message: what `odek session compact` and a chat's /compact do. It
// returns the new conversation; the side call's usage is in the
// Compaction. It never drops anything without a digest: on a side-call
// error the conversation is returned unchanged with the error.
func Compact(ctx context.Context, m Model, model string, msgs []Message, keep int) ([]Message, Compaction, error) {
	withSys := append([]Message{{Role: RoleSystem}}, msgs...)
	p, ok := planCompaction(withSys, 1, 0, keep)
	if !ok || p.folded == 0 {
		return msgs, Compaction{}, ErrNothingToCompact
	}
	d, usage, err := sideCall(ctx, m, model, p, withSys, 0)
	if err != nil {
		return msgs, Compaction{Usage: usage}, err
	}
	out := p.apply(withSys, d)
	return out[1:], Compaction{BeforeTokens: p.before, AfterTokens: estimateAll(out), FoldedGroups: p.folded, Usage: usage}, nil
}

// sideCall asks model for the digest of plan p over msgs; maxInputBytes
// bounds what it is shown (0 ⇒ no bound).
func sideCall(ctx context.Context, m Model, model string, p compactPlan, msgs []Message, maxInputBytes int) (Message, Usage, error) {
	req := Request{Model: model, Messages: []Message{
		{Role: RoleSystem, Content: DigestPrompt},
		{Role: RoleUser, Content: p.sideCallInput(msgs, maxInputBytes)},
	}}
	resp, err := m.Complete(ctx, req)
	if err != nil {
		return Message{}, Usage{}, fmt.Errorf("agent: digest side call: %w", err)
	}
	if strings.TrimSpace(resp.Message.Content) == "" {
		return Message{}, resp.Usage, errors.New("agent: digest side call: the model answered with no text")
	}
	return digestMessage(resp.Message.Content), resp.Usage, nil
}

// contextLimits are the high- and low-water marks in tokens for the
// run's window (0, 0 without a window), less what every request carries
// besides the transcript (the tool declarations and the plan block).
func (r *run) contextLimits() (high, low int) {
	if r.cfg.ContextWindow <= 0 {
		return 0, 0
	}
	share := r.cfg.ContextShare
	if share <= 0 || share > 1 {
		share = DefaultContextShare
	}
	lowShare := r.cfg.ContextLowShare
	if lowShare <= 0 || lowShare >= share {
		lowShare = min(DefaultContextLowShare, share*0.75)
	}
	high = int(float64(r.cfg.ContextWindow) * share)
	low = int(float64(r.cfg.ContextWindow) * lowShare)
	// The plan block and the tool declarations ride along every request.
	fixed := r.specTokens
	if pm, ok := r.planMessage(); ok {
		fixed += estimateTokens(&pm)
	}
	return high - fixed, low - fixed
}

// compact keeps the next request under the high-water mark: a compaction
// with a digest, or, when that fails or is turned off, dropping the same
// groups with a note. It returns a budget error when the side call's
// tokens exhausted the budget (the digest is kept: it was paid for).
func (r *run) compact(ctx context.Context, iter int, msgs *[]Message, res *Result) error {
	high, low := r.contextLimits()
	if high <= 0 {
		return nil
	}
	p, ok := planCompaction(*msgs, high, low, 2)
	if !ok {
		return nil
	}
	var reason error
	switch {
	case r.cfg.NoCompaction:
	case !r.budgetAllows(p.before):
		reason = errors.New("the budget has no room for the digest side call")
	default:
		// The side call (no tools, a short prompt) is shown at most about
		// the high-water mark's worth of bytes.
		d, usage, err := sideCall(ctx, r.cfg.LLM, r.cfg.Model, p, *msgs, 3*(high+r.specTokens))
		res.Usage = res.Usage.Add(usage)
		budgetErr := r.addUsage(usage)
		if err == nil {
			*msgs = p.apply(*msgs, d)
			emit(r.em, iter, "", events.ContextCompactedData{BeforeTokens: p.before, AfterTokens: estimateAll(*msgs),
				FoldedGroups: p.folded, SideCallInputTokens: usage.PromptTokens, SideCallOutputTokens: usage.CompletionTokens})
			r.signalBudget(iter)
			return budgetErr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason = err
		if budgetErr != nil {
			r.log.WithError(budgetErr).Warn("the digest side call exhausted the budget")
		}
	}
	if reason != nil {
		r.log.WithError(reason).Warn("compaction failed; dropping the oldest message groups instead")
	}
	*msgs = p.applyTrim(*msgs)
	emit(r.em, iter, "", events.ContextTrimmedData{Mode: "proactive", DroppedGroups: p.folded})
	return nil
}

// budgetAllows reports whether the budget's input-token limit (when it
// has one and reports it) leaves room for a side call over about tokens.
func (r *run) budgetAllows(tokens int) bool {
	m, ok := r.cfg.Budget.(BudgetMeter)
	if !ok || r.cfg.Budget == nil {
		return true
	}
	allowed := true
	m.Levels(func(limit string, observed, max float64) {
		if limit == "input_tokens" && observed+float64(tokens) > max {
			allowed = false
		}
	})
	return allowed
}
