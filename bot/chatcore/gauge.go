package chatcore

import (
	"fmt"
	"time"

	"github.com/odekrun/odek/bot/tgformat"
	"github.com/odekrun/odek/events"
)

// Gauge is what the front end knows of how full a chat's conversation is: the
// input tokens of the latest model call of its latest job (the whole
// context that call sent), the model, and the latest compaction. Built
// from the jobs' progress (iteration_completed, run_started,
// context_compacted) and from /compact. Pure data, kept with the chat.
type Gauge struct {
	Session     string // the conversation it describes
	Model       string // "" = unknown (the workers' default)
	Tokens      int64  // input tokens of the latest model call
	At          time.Time
	CompactedAt time.Time
	Before      int64 // estimated tokens before and after the latest compaction
	After       int64
}

// ContextInfo is what a job's progress says about its conversation.
type ContextInfo struct {
	Model       string
	Tokens      int64
	Compacted   bool
	Before      int64
	After       int64
	CompactedAt time.Time
}

// Apply folds one progress event into ci. Pure.
func (ci ContextInfo) Apply(ev *events.Event) ContextInfo {
	switch ev.Type {
	case events.RunStarted:
		if m, _ := ev.Data["model"].(string); m != "" {
			ci.Model = tgformat.OneLine(m, 80)
		}
	case events.IterationCompleted:
		var d events.IterationCompletedData
		d.Decode(ev.Data)
		if d.CallInputTokens > 0 {
			ci.Tokens = int64(d.CallInputTokens)
		}
	case events.ContextCompacted:
		var d events.ContextCompactedData
		d.Decode(ev.Data)
		ci.Compacted, ci.Before, ci.After, ci.CompactedAt = true, int64(max(d.BeforeTokens, 0)), int64(max(d.AfterTokens, 0)), ev.Timestamp
		ci.Tokens = ci.After
	}
	return ci
}

// Record updates the Gauge of session with what a finished job's progress
// said, at now. Pure.
func (g Gauge) Record(session string, ci ContextInfo, now time.Time) Gauge {
	if g.Session != session {
		g = Gauge{Session: session}
	}
	if ci.Model != "" {
		g.Model = ci.Model
	}
	if ci.Tokens > 0 {
		g.Tokens, g.At = ci.Tokens, now
	}
	if ci.Compacted {
		at := ci.CompactedAt
		if at.IsZero() || at.After(now) {
			at = now
		}
		g.CompactedAt, g.Before, g.After = at, ci.Before, ci.After
	}
	return g
}

// text renders the Gauge for /status, e.g.
//
//	Context: ~12,345 of 32,768 tokens (38 %) · compacted 2 h ago (40,000 → 12,000)
//
// window 0 leaves the share out; "" when nothing is known. Pure.
func (g Gauge) Text(lang string, window int, now time.Time) string {
	if g.Tokens <= 0 && g.CompactedAt.IsZero() {
		return ""
	}
	s := Tr(lang, "ctx.used", tgformat.Thousands(g.Tokens))
	if window > 0 {
		s = Tr(lang, "ctx.of", tgformat.Thousands(g.Tokens), tgformat.Thousands(int64(window)), g.Tokens*100/int64(window))
	}
	if !g.CompactedAt.IsZero() {
		s += " · " + Tr(lang, "ctx.compacted", HumanWait(now.Sub(g.CompactedAt)), tgformat.Thousands(g.Before), tgformat.Thousands(g.After))
	} else {
		s += " · " + Tr(lang, "ctx.never")
	}
	return s
}

// CachedLine renders the prompt cache's share of a total's input tokens:
// ", 40 % of input cached" ("" when nothing was cached). Pure.
func CachedLine(lang string, prompt, cached int64) string {
	if cached <= 0 || prompt <= 0 {
		return ""
	}
	return fmt.Sprintf(Tr(lang, "use.cached"), tgformat.Thousands(cached), min(cached, prompt)*100/prompt)
}
