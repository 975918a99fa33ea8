package chatcore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/bot/tgformat"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
)

// Status is what a job's status message shows. It is built from the job's
// progress entries by Apply and rendered by TextIn; both are pure.
type Status struct {
	Started   bool // the job has begun (any entry of its run arrived)
	Finished  bool // its run ended
	attempt   int
	iteration int
	tool      string // tool name of the latest call
	detail    string // from args_summary only: argv0, path or host
	mcp       string // the running MCP call's latest progress, rendered
	// The answer as the model writes it (odek.delta/v1 entries): the
	// current model call, the bytes of its text received, and the text's
	// last maxDraftKept bytes.
	DraftCall int
	DraftLen  int
	Draft     string
	// Streamed is every model call's text of the run so far, in order,
	// append-only (stream.go): what a draft may show without ever jumping
	// back. StreamedCut: it stopped growing at maxStreamedKept.
	Streamed    string
	StreamedCut bool
	newCall     bool // a later call began: the next text is set apart
	// tools are the run's latest tool calls (progress mode's lines).
	tools     []toolLine
	planDone  int
	planTotal int
	tokens    int64
	elapsed   time.Duration
	// CI is what the events say about the conversation (gauge.go).
	CI ContextInfo
}

// maxDetail caps the tool detail shown, in characters.
const maxDetail = 60

// apply folds one progress entry (an odek.progress/v1 summary or an
// odek.event/v1 line) into s. Entries that do not parse are ignored: the
// progress stream is informational and never fails a job.
func (s Status) Apply(data []byte) Status {
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &head) != nil {
		return s
	}
	switch head.Schema {
	case queue.SummarySchema:
		var p queue.ProgressSummary
		if json.Unmarshal(data, &p) != nil {
			return s
		}
		s.Started = true
		s.Finished = s.Finished || p.State == "finished"
		s.attempt = max(s.attempt, p.Attempt)
		s.iteration = max(s.iteration, p.Iteration)
		if p.LastTool != "" && p.LastTool != s.tool {
			s.tool, s.detail = tgformat.OneLine(p.LastTool, 40), ""
		}
		s.tokens = max(s.tokens, p.InputTokens+p.OutputTokens)
		s.elapsed = max(s.elapsed, time.Duration(p.ElapsedMS)*time.Millisecond)
	case queue.DeltaSchema:
		var d queue.AnswerDelta
		if json.Unmarshal(data, &d) != nil {
			return s
		}
		s.Started = true
		s = s.AddDelta(d)
	case events.Schema:
		var ev events.Event
		if json.Unmarshal(data, &ev) != nil {
			return s
		}
		s.Started = true
		s.iteration = max(s.iteration, ev.Iteration)
		s.CI = s.CI.Apply(&ev)
		switch ev.Type {
		case events.ToolCallStarted:
			s.tool = tgformat.OneLine(ev.Tool, 40)
			var d events.ToolCallStartedData
			d.Decode(ev.Data)
			s.detail = argsDetail(d.ArgsSummary)
			s.mcp = ""
			s = s.toolStarted() // stream.go
		case events.ToolCallCompleted, events.ToolCallFailed:
			s.mcp = ""
			s = s.toolEnded(ev.Type == events.ToolCallFailed)
		case toolCallProgress:
			if t, _ := ev.Data["tool"].(string); t != "" && s.tool == "" {
				s.tool = tgformat.OneLine(t, 40)
			}
			s.mcp = mcpProgress(ev.Data)
		case events.IterationCompleted, events.RunCompleted:
			// Both carry the run's cumulative input_tokens and output_tokens.
			var d events.IterationCompletedData
			d.Decode(ev.Data)
			s.tokens = max(s.tokens, int64(d.InputTokens)+int64(d.OutputTokens))
		case events.PlanCreated, events.PlanUpdated, events.PlanBlocked:
			// docs/PLANNING.md: "steps" is the step count, "done" the done
			// ones (plan_updated's fields cover the other two; missing is 0).
			var d events.PlanUpdatedData
			d.Decode(ev.Data)
			if total := d.Steps; total > 0 && total <= 1000 {
				s.planDone, s.planTotal = min(max(d.Done, 0), total), total
			}
		}
		if ev.Type == events.RunCompleted || ev.Type == events.RunFailed {
			s.Finished = true
		}
	}
	return s
}

// maxDraftKept bounds the streamed answer text a Status keeps (its tail).
const maxDraftKept = 8 << 10

// addDelta folds a piece of the streamed answer into s: a later call
// starts a new text, a piece that does not continue the text (an entry
// was missed) starts it again after "…". Pure.
func (s Status) AddDelta(d queue.AnswerDelta) Status {
	switch {
	case d.Call < s.DraftCall || d.Offset < 0:
		return s // an older call's late piece
	case d.Call > s.DraftCall:
		s.DraftCall, s.DraftLen, s.Draft = d.Call, 0, ""
		s.newCall = true
	}
	switch {
	case d.Offset == s.DraftLen:
		s.Draft += d.Text
		s = s.stream(d.Text)
	case d.Offset > s.DraftLen:
		s.Draft = "…" + d.Text
		s = s.stream("…" + d.Text)
	default:
		return s // a repeat
	}
	s.DraftLen = d.Offset + len(d.Text)
	if over := len(s.Draft) - maxDraftKept; over > 0 {
		i := over
		for i < len(s.Draft) && !utf8.RuneStart(s.Draft[i]) {
			i++
		}
		s.Draft = "…" + s.Draft[i:]
	}
	return s
}

// toolCallProgress is the event an MCP server's notifications/progress
// becomes (events.ToolCallProgress): data tool, server, mcp_tool,
// progress, total (absent when unknown) and message (the server's
// untrusted text, ≤ 200 characters).
const toolCallProgress = events.ToolCallProgress

// maxMCPMessage caps the server's progress message shown, in characters.
const maxMCPMessage = 60

// mcpProgress renders a tool_call_progress: "30 %" of a known total, else
// the bare progress value, then the server's message (cleaned, clipped;
// plain text, so it cannot format the status). Pure.
func mcpProgress(d map[string]any) string {
	p, _ := d["progress"].(float64)
	total, _ := d["total"].(float64)
	var out string
	switch {
	case total > 0 && p >= 0:
		out = fmt.Sprintf("%d %%", int(min(p/total, 1)*100))
	case p > 0:
		out = strconv.FormatFloat(p, 'f', -1, 64)
	}
	if m, _ := d["message"].(string); strings.TrimSpace(m) != "" {
		m = tgformat.OneLine(m, maxMCPMessage)
		if out != "" {
			out += " · "
		}
		out += m
	}
	return out
}

// argsDetail picks the one field of an args_summary that is safe and
// useful to show: the program (shell), the path (file tools) or the host
// (network tools). Raw arguments are never shown.
func argsDetail(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"argv0", "path", "host"} {
		if s, ok := m[k].(string); ok && s != "" {
			return tgformat.OneLine(s, maxDetail)
		}
	}
	return ""
}

// text renders the Status line(s) shown while a job runs, e.g.
//
//	⏳ Working · step 3 · shell: go · plan 2/5 · 1,234 tokens · 12 s
//
// queuedAt is the job's queue position (0 = next or running). elapsed is
// the bot's own measure since the job started, used when no summary said
// more. Plain text, no parse mode.
func (s Status) Text(position int, elapsed time.Duration) string {
	return s.TextIn("en", position, elapsed)
}

// textIn is text in lang.
func (s Status) TextIn(lang string, position int, elapsed time.Duration) string {
	if !s.Started {
		if position > 0 {
			return Tr(lang, "st.queued", position)
		}
		return Tr(lang, "st.starting")
	}
	parts := []string{Tr(lang, "st.working")}
	if s.iteration > 0 {
		parts = append(parts, Tr(lang, "st.step", s.iteration))
	}
	if s.tool != "" {
		t := "🔧 " + s.tool
		if s.detail != "" {
			t += ": " + s.detail
		}
		parts = append(parts, t)
		if s.mcp != "" {
			parts = append(parts, s.mcp)
		}
	}
	if s.planTotal > 0 {
		parts = append(parts, Tr(lang, "st.plan", s.planDone, s.planTotal))
	}
	if s.tokens > 0 {
		parts = append(parts, Tr(lang, "st.tokens", tgformat.Thousands(s.tokens)))
	}
	parts = append(parts, tgformat.Seconds(max(elapsed, s.elapsed).Truncate(time.Second)))
	if s.attempt > 1 {
		parts = append(parts, Tr(lang, "st.attempt", s.attempt))
	}
	return strings.Join(parts, " · ")
}
