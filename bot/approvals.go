package bot

import (
	"context"
	"fmt"
	"github.com/odekrun/odek/bot/chatcore"
	"sort"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/odekrun/odek/bot/tgclient"
)

// ---- approvals ----

func (b *Bot) approvalsLoop(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		as, err := b.aq.ReadApprovals(ctx, b.consumer, 16, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			b.log.WithError(err).Warn("bot: reading approvals failed; backing off")
			if sleep(ctx, tgclient.Backoff(failures, 10*time.Second)) != nil {
				return nil
			}
			continue
		}
		failures = 0
		for _, a := range as {
			b.serial.Do(b.jobKey(a.ChatID, a.JobID), func(c *chat) { c.ask(ctx, a) })
		}
		b.sweepApprovals(ctx) // approvals_press.go
	}
	return nil
}

// approvalData is the callback data of an approval button: "ap:<id>:y|n"
// (at most 37 bytes of Telegram's 64).
func approvalData(id string, allow bool) string {
	if allow {
		return "ap:" + id + ":y"
	}
	return "ap:" + id + ":n"
}

// parseApprovalData is the inverse of approvalData. Pure; the data comes
// from Telegram and is untrusted.
func parseApprovalData(s string) (id string, allow, ok bool) {
	rest, found := strings.CutPrefix(s, "ap:")
	if !found || len(rest) < 3 || len(rest) > 64 {
		return "", false, false
	}
	id, ans := rest[:len(rest)-2], rest[len(rest)-2:]
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false, false
		}
	}
	switch ans {
	case ":y":
		return id, true, id != ""
	case ":n":
		return id, false, id != ""
	}
	return "", false, false
}

// classWords says in chat words what a danger class of a tool call means
// (internal/tools' classes: texts "class.<name>"); "" for another class.
func classWords(lang, class string) string {
	if _, ok := chatcore.Lookup("en", "class."+class); !ok {
		return ""
	}
	return tr(lang, "class."+class)
}

// approvalText renders a worker's approval question in chat words. The
// question is the tool policy's terminal prompt,
//
//	odek: allow shell (code_execution, argv0=python3, command=python3 x.py)? [y/N]
//
// whose summary values are already redacted by the tool policy; it is
// shown as "what, class (meaning), then one line per summary field".
// Questions of another shape are shown cleaned, without "[y/N]". Pure.
func approvalText(question string) string { return approvalTextIn("en", question) }

// approvalTextIn is approvalText in lang.
func approvalTextIn(lang, question string) string {
	q := oneLineKeepBreaks(question, 1500)
	q = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), "[y/N]"))
	body, ok := strings.CutPrefix(q, "odek: allow ")
	open := strings.IndexByte(body, '(')
	if !ok || open <= 0 || !strings.HasSuffix(body, ")?") {
		return q
	}
	tool := strings.TrimSpace(body[:open])
	fields := splitSummary(body[open+1 : len(body)-2])
	if len(fields) == 0 {
		return q
	}
	class := fields[0]
	var b strings.Builder
	b.WriteString(tr(lang, "ap.wants", tool) + "\n" + tr(lang, "ap.class", class))
	if w := classWords(lang, class); w != "" {
		fmt.Fprintf(&b, " (%s)", w)
	}
	kv := fields[1:]
	sort.SliceStable(kv, func(i, j int) bool { return summaryRank(kv[i]) < summaryRank(kv[j]) })
	for _, f := range kv {
		k, v, _ := strings.Cut(f, "=")
		fmt.Fprintf(&b, "\n%s: %s", strings.ReplaceAll(k, "_", " "), v)
	}
	return b.String()
}

// summaryRank puts the fields a person decides on first.
func summaryRank(f string) int {
	k, _, _ := strings.Cut(f, "=")
	switch k {
	case "command", "cmd", "command_line", "argv":
		return 0
	case "argv0", "path", "host", "url":
		return 1
	}
	return 2
}

// splitSummary splits "a, k=v, k2=v2" at the ", " before each key.
func splitSummary(s string) []string {
	parts := strings.Split(s, ", ")
	var out []string
	for _, p := range parts {
		if len(out) > 1 && !strings.Contains(p, "=") {
			out[len(out)-1] += ", " + p // a value with ", " in it
			continue
		}
		out = append(out, strings.TrimSpace(p))
	}
	return out
}

// oneLineKeepBreaks cleans untrusted multi-line text for plain display:
// control characters other than line breaks removed, at most max
// characters.
func oneLineKeepBreaks(s string, max int) string {
	lines := strings.Split(cleanText(s), "\n")
	for i := range lines {
		lines[i] = oneLine(lines[i], max)
	}
	out := strings.TrimSpace(strings.Join(lines, "\n"))
	if r := []rune(out); len(r) > max {
		out = string(r[:max-1]) + "…"
	}
	return out
}

func (b *Bot) answerCallback(ctx context.Context, id, text string, alert bool) {
	cb := tgbotapi.NewCallback(id, text)
	cb.ShowAlert = alert
	if _, kind, err := b.tg.Call(ctx, cb, false); kind != tgOK && kind != tgCanceled {
		b.log.WithError(err).Debug("bot: answerCallbackQuery failed")
	}
}

// handleCallback settles a button press: a /model or /schedule button,
// or an approval (approvals_press.go). It runs in the chat's actor.
func (c *chat) handleCallback(ctx context.Context, cq *tgbotapi.CallbackQuery) {
	ctx = c.inTopic(ctx)
	lang := langOf(cq.From.LanguageCode)
	if i, ok := parseModelData(cq.Data); ok {
		c.pressModel(ctx, cq, lang, i)
		return
	}
	if c.pressSchedule(ctx, cq, lang) {
		return // schedule.go: a /schedule list button
	}
	c.pressApproval(ctx, cq, lang)
}
