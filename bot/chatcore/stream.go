package chatcore

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/bot/tgformat"
)

// Progress and streaming without noise (issue 26, point 7): what a chat
// sees while a job runs is chosen per chat (/stream) over the operator's
// default (ODEK_TELEGRAM_STREAM):
//
//   - StreamProgress: one status message with the step line and a line
//     per finished tool call; no answer text until the answer arrives as
//     a new message.
//   - StreamPartial: the answer as the model writes it (a draft in
//     private chats, the status message elsewhere), append-only: a draft
//     never shrinks and never jumps back (GrowDraft).
//   - StreamOff: the one-line status only.
//
// After a provider error the chat gets one readable notice; further
// provider errors within a cooldown are folded into it (ProviderTrouble,
// FoldNotice).

// Stream is a chat's streaming mode.
type Stream string

// Streaming modes.
const (
	StreamProgress Stream = "progress"
	StreamPartial  Stream = "partial"
	StreamOff      Stream = "off"
)

// ParseStream reads a streaming mode case-insensitively. The operator's
// older words are kept: "" and "auto" (drafts where the Bot API offers
// them) and "edit" (always the status message) are StreamPartial. An
// unknown word is an error naming the allowed ones.
func ParseStream(s string) (Stream, error) {
	switch m := Stream(strings.ToLower(strings.TrimSpace(s))); m {
	case "", "auto", "edit":
		return StreamPartial, nil
	case StreamProgress, StreamPartial, StreamOff:
		return m, nil
	}
	return "", fmt.Errorf("stream mode must be progress, partial or off, got %q", clipWord(s, 20))
}

// maxStreamedKept bounds Status.Streamed in bytes: room for a draft's
// 3,500 characters of up to four bytes each.
const maxStreamedKept = 16 << 10

// stream appends a piece of answer text to s.Streamed, after a blank line
// when a later model call began. Past maxStreamedKept it stops growing
// (StreamedCut) at a character boundary. Pure.
func (s Status) stream(piece string) Status {
	if s.newCall && s.Streamed != "" && piece != "" {
		piece = "\n\n" + piece
	}
	if piece != "" {
		s.newCall = false
	}
	if s.StreamedCut {
		return s
	}
	if room := maxStreamedKept - len(s.Streamed); len(piece) > room {
		for room > 0 && !utf8.RuneStart(piece[room]) {
			room--
		}
		piece, s.StreamedCut = piece[:room], true
	}
	s.Streamed += piece
	return s
}

// GrowDraft is the next text of a draft that shows shown now, given the
// run's streamed text full (cut: it stopped growing before its end): at
// most max characters, "…" ending a cut one, and only ever a longer text
// that begins with shown. ok is false when nothing new should be sent:
// the same text, a text that would not extend shown (it would shrink or
// jump back), or nothing but spaces. Pure.
func GrowDraft(shown, full string, cut bool, max int) (next string, ok bool) {
	next = full
	if r := []rune(full); len(r) > max {
		next, cut = string(r[:max-1]), true
	}
	if cut && !strings.HasSuffix(next, "…") {
		next += "…"
	}
	if next == shown || !strings.HasPrefix(next, shown) || strings.HasSuffix(shown, "…") || strings.TrimSpace(next) == "" {
		return shown, false
	}
	return next, true
}

// toolLine is one tool call in progress mode's list.
type toolLine struct {
	text  string // "tool: detail"
	state int8   // 0 running, 1 done, -1 failed
}

// maxToolLines is how many finished tool calls progress mode lists.
const maxToolLines = 5

// toolStarted records the tool call s.tool/s.detail just started. Pure
// (the list is copied, never shared with an earlier Status).
func (s Status) toolStarted() Status {
	t := s.tool
	if s.detail != "" {
		t += ": " + s.detail
	}
	s.tools = append(slices.Clip(s.tools), toolLine{text: toolLineText(t)})
	if over := len(s.tools) - (maxToolLines + 1); over > 0 {
		s.tools = slices.Clone(s.tools[over:])
	}
	return s
}

// toolEnded marks the latest running tool call done or failed. Pure.
func (s Status) toolEnded(failed bool) Status {
	for i := len(s.tools) - 1; i >= 0; i-- {
		if s.tools[i].state == 0 {
			s.tools = slices.Clone(s.tools)
			s.tools[i].state = 1
			if failed {
				s.tools[i].state = -1
			}
			break
		}
	}
	return s
}

// ProgressLines are progress mode's lines under the status line: the
// finished tool calls, oldest first (the running one is in the status
// line). "" when there are none. Pure.
func (s Status) ProgressLines() string {
	var lines []string
	for _, t := range s.tools {
		switch t.state {
		case 1:
			lines = append(lines, "✓ "+t.text)
		case -1:
			lines = append(lines, "✗ "+t.text)
		}
	}
	if len(lines) > maxToolLines {
		lines = lines[len(lines)-maxToolLines:]
	}
	return strings.Join(lines, "\n")
}

// ProviderTrouble names what a failed job's error says about the model
// provider, as the key of a readable notice: "prov.key" (the key was
// refused), "prov.quota" (no credit left), "prov.down" (it failed or did
// not answer, after the client's retries). "" for any other failure
// (a tool, a budget, a request too long for the model), which the chat
// sees as before. Pure.
func ProviderTrouble(errText string) string {
	e := strings.ToLower(errText)
	if !strings.Contains(e, "llm: ") {
		return ""
	}
	switch {
	case strings.Contains(e, "context length"), strings.Contains(e, "invalid request"), strings.Contains(e, "cut off by the length limit"):
		return ""
	case strings.Contains(e, "unauthorized"):
		return "prov.key"
	case strings.Contains(e, "quota"):
		return "prov.quota"
	}
	return "prov.down"
}

// FoldNotice reports whether a provider error at now folds into the
// chat's notice shown at last (zero: none) rather than showing a new one:
// within cooldown of it. Pure.
func FoldNotice(last, now time.Time, cooldown time.Duration) bool {
	return !last.IsZero() && now.Sub(last) < cooldown && !now.Before(last)
}

// NoticeText is the provider notice of kind key with n failed requests
// folded into it (n ≥ 1) since at (shown as UTC clock time). Pure.
func NoticeText(lang, key string, n int, at time.Time) string {
	text := Tr(lang, key)
	if n > 1 {
		text += "\n" + Tr(lang, "prov.more", n, at.UTC().Format("15:04"))
	}
	return text
}

// streamTexts are the texts of /stream and the provider notices, in
// English and German.
var streamTexts = map[string]map[string]string{
	"en": {
		"stream.show": "While a job runs, this chat shows: %s.\n" +
			"/stream progress — one status message with the steps and tool calls; the answer comes as a new message\n" +
			"/stream partial — the answer as it is written\n" +
			"/stream off — only a short status line",
		"stream.progress": "the steps and tool calls",
		"stream.partial":  "the answer as it is written",
		"stream.off":      "a short status line only",
		"stream.set":      "✅ From now on, while a job runs this chat shows %s.",
		"stream.bad":      "Unknown choice %q: use /stream progress, /stream partial or /stream off.",
		"prov.down":       "⚠️ The model provider is not answering right now (it failed after several tries), so your request did not run. Send it again in a few minutes.",
		"prov.key":        "⚠️ The model provider refused this bot's API key, so your request did not run. The bot's operator has to fix the key.",
		"prov.quota":      "⚠️ The model provider says this bot's account has no credit left, so your request did not run. The bot's operator has to top it up.",
		"prov.more":       "%d requests failed this way since %s UTC.",
	},
	"de": {
		"stream.show": "Während ein Auftrag läuft, zeigt dieser Chat: %s.\n" +
			"/stream progress — eine Statusnachricht mit den Schritten und Werkzeugaufrufen; die Antwort kommt als neue Nachricht\n" +
			"/stream partial — die Antwort, während sie geschrieben wird\n" +
			"/stream off — nur eine kurze Statuszeile",
		"stream.progress": "die Schritte und Werkzeugaufrufe",
		"stream.partial":  "die Antwort, während sie geschrieben wird",
		"stream.off":      "nur eine kurze Statuszeile",
		"stream.set":      "✅ Ab jetzt zeigt dieser Chat, während ein Auftrag läuft, %s.",
		"stream.bad":      "Unbekannte Wahl %q: nutze /stream progress, /stream partial oder /stream off.",
		"prov.down":       "⚠️ Der Modellanbieter antwortet gerade nicht (er ist nach mehreren Versuchen gescheitert), deshalb lief deine Anfrage nicht. Sende sie in ein paar Minuten noch einmal.",
		"prov.key":        "⚠️ Der Modellanbieter hat den API-Schlüssel dieses Bots abgelehnt, deshalb lief deine Anfrage nicht. Der Betreiber des Bots muss den Schlüssel korrigieren.",
		"prov.quota":      "⚠️ Laut Modellanbieter hat das Konto dieses Bots kein Guthaben mehr, deshalb lief deine Anfrage nicht. Der Betreiber des Bots muss es aufladen.",
		"prov.more":       "%d Anfragen sind seit %s UTC so gescheitert.",
	},
}

// toolLineText clips a tool line for the status message.
func toolLineText(s string) string { return tgformat.OneLine(s, 80) }
