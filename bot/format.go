package bot

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxMessageLen is Telegram's limit on one message's text, in UTF-16 code
// units (Telegram counts characters as UTF-16; an emoji outside the BMP is
// two). The bot measures the text it sends, escapes included, so a chunk
// within this limit is within Telegram's limit after entity parsing too.
const MaxMessageLen = 4096

// Chunk is one message of a reply in two renderings of the same source
// text: Markdown for parse_mode MarkdownV2, and Plain, sent without a parse
// mode when Telegram rejects Markdown ("can't parse entities"). Both are at
// most the limit FormatReply was given.
type Chunk struct {
	Markdown string
	Plain    string
}

// markdownV2Special are the characters MarkdownV2 requires escaped outside
// entities (https://core.telegram.org/bots/api#markdownv2-style), plus the
// backslash itself.
const markdownV2Special = "_*[]()~`>#+-=|{}.!\\"

// EscapeMarkdownV2 escapes every MarkdownV2 special character in s so
// Telegram shows s literally. Invalid UTF-8 is replaced with U+FFFD and NUL
// bytes are dropped.
func EscapeMarkdownV2(s string) string {
	s = cleanText(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for _, r := range s {
		if r < utf8.RuneSelf && strings.IndexByte(markdownV2Special, byte(r)) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapeCode escapes text inside a code or pre entity: only '`' and '\'.
func escapeCode(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if r == '`' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapeLinkURL escapes the inside of a link's (...) part: ')' and '\'.
func escapeLinkURL(s string) string {
	return strings.NewReplacer(`\`, `\\`, `)`, `\)`).Replace(s)
}

// cleanText makes untrusted text safe to measure and send: valid UTF-8, no
// NUL, "\r\n" as "\n".
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return s
}

// TextLen is the length of s as Telegram counts it: UTF-16 code units.
func TextLen(s string) int {
	n := 0
	for _, r := range s {
		if l := utf16.RuneLen(r); l > 0 {
			n += l
		} else {
			n++ // never produced by ranging over a string; defensive
		}
	}
	return n
}

// block is a paragraph or a fenced code block of the source answer.
type block struct {
	code bool
	lang string // code only: sanitized info string
	text string // paragraph text, or the code block's content without fences
}

// parseBlocks splits a Markdown answer into paragraphs (separated by blank
// lines) and fenced code blocks (``` lines; an unclosed fence runs to the
// end). Pure.
func parseBlocks(s string) []block {
	lines := strings.Split(s, "\n")
	var out []block
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, block{text: strings.Join(para, "\n")})
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(trimmed, "```") {
			flush()
			lang := sanitizeLang(strings.TrimSpace(trimmed[3:]))
			var code []string
			i++
			for ; i < len(lines); i++ {
				if strings.TrimSpace(lines[i]) == "```" {
					break
				}
				code = append(code, lines[i])
			}
			if text := strings.Join(code, "\n"); strings.TrimSpace(text) != "" {
				out = append(out, block{code: true, lang: lang, text: text})
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		para = append(para, line)
	}
	flush()
	return out
}

// sanitizeLang keeps a code block's language only when it is a plain word
// (letters, digits, "+", "-", "_"), at most 32 bytes.
func sanitizeLang(s string) string {
	if len(s) > 32 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '_') {
			return ""
		}
	}
	return s
}

// renderCode renders a fenced code block: ```lang\n<escaped>\n```.
func renderCode(lang, text string) (md, plain string) {
	return "```" + lang + "\n" + escapeCode(text) + "\n```", "```" + lang + "\n" + text + "\n```"
}

// renderInline converts one paragraph of Markdown to MarkdownV2. It knows
// `code`, **bold**, *italic*, ~~strike~~, [text](http(s) url), "# "
// headings (bold) and "- "/"* " bullets (•); everything else is escaped and
// shown literally. Unbalanced markers are literal text. Pure.
func renderInline(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		rest := line[indent:]
		b.WriteString(line[:indent])
		if h := headingText(rest); h != "" {
			b.WriteString("*" + EscapeMarkdownV2(h) + "*")
			continue
		}
		if strings.HasPrefix(rest, "- ") || strings.HasPrefix(rest, "* ") || strings.HasPrefix(rest, "+ ") {
			b.WriteString("• ")
			rest = rest[2:]
		}
		renderSpans(&b, rest)
	}
	return b.String()
}

// headingText returns the text of an ATX heading line ("# x" to "###### x"), or "".
func headingText(line string) string {
	n := 0
	for n < len(line) && n < 7 && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#"))
}

// renderSpans renders the inline spans of one line. An entity whose opening
// marker would directly follow the same marker character (e.g. "_a__b_",
// which MarkdownV2 reads as underline) is rendered as literal text instead.
func renderSpans(b *strings.Builder, s string) {
	after := func(marker byte) bool {
		out := b.String()
		return len(out) > 0 && out[len(out)-1] == marker && (len(out) < 2 || out[len(out)-2] != '\\')
	}
	// noClose[n] records that no run of n backticks follows, so a line of
	// many unmatched backticks is scanned once, not once per backtick.
	noClose := map[int]bool{}
	for len(s) > 0 {
		switch {
		case s[0] == '`':
			run := len(s) - len(strings.TrimLeft(s, "`"))
			fence := s[:run]
			end := -1
			if !noClose[run] {
				if end = strings.Index(s[run:], fence); end < 0 {
					noClose[run] = true
				}
			}
			if end > 0 && !strings.HasPrefix(s[run+end+run:], "`") && !after('`') {
				inner := s[run : run+end]
				b.WriteString("`" + escapeCode(inner) + "`")
				s = s[run+end+run:]
				continue
			}
			b.WriteString(EscapeMarkdownV2(fence))
			s = s[run:]
			continue
		case strings.HasPrefix(s, "**"):
			if inner, rest, ok := delimited(s, "**"); ok && !after('*') {
				b.WriteString("*" + EscapeMarkdownV2(inner) + "*")
				s = rest
				continue
			}
		case strings.HasPrefix(s, "~~"):
			if inner, rest, ok := delimited(s, "~~"); ok && !after('~') {
				b.WriteString("~" + EscapeMarkdownV2(inner) + "~")
				s = rest
				continue
			}
		case s[0] == '*':
			if inner, rest, ok := delimited(s, "*"); ok && !after('_') {
				b.WriteString("_" + EscapeMarkdownV2(inner) + "_")
				s = rest
				continue
			}
		case s[0] == '[':
			if text, url, rest, ok := link(s); ok {
				b.WriteString("[" + EscapeMarkdownV2(text) + "](" + escapeLinkURL(url) + ")")
				s = rest
				continue
			}
		}
		// Literal text up to the next character that may start a span.
		next := strings.IndexAny(s[1:], "`*~[")
		if next < 0 {
			next = len(s)
		} else {
			next++
		}
		b.WriteString(EscapeMarkdownV2(s[:next]))
		s = s[next:]
	}
}

// delimited matches d<inner>d at the start of s, inner non-empty, not
// starting or ending with a space and not containing d.
func delimited(s, d string) (inner, rest string, ok bool) {
	body := s[len(d):]
	end := strings.Index(body, d)
	if end <= 0 {
		return "", "", false
	}
	inner = body[:end]
	if strings.TrimSpace(inner) != inner || (d == "*" && strings.HasPrefix(body[end:], "**")) {
		return "", "", false
	}
	return inner, body[end+len(d):], true
}

// Longest link text and URL recognised, in bytes; longer ones are literal
// text. They bound the scan per '['.
const (
	maxLinkText = 512
	maxLinkURL  = 2048
)

// link matches [text](url) at the start of s with an http or https url
// without spaces.
func link(s string) (text, url, rest string, ok bool) {
	close := strings.Index(s[:min(len(s), maxLinkText+2)], "](")
	if close <= 1 || strings.ContainsAny(s[1:close], "[]\n") {
		return "", "", "", false
	}
	end := strings.IndexByte(s[close+2:min(len(s), close+2+maxLinkURL)], ')')
	if end <= 0 {
		return "", "", "", false
	}
	url = s[close+2 : close+2+end]
	if !(strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://")) || strings.ContainsAny(url, " \t\n") {
		return "", "", "", false
	}
	return s[1:close], url, s[close+2+end+1:], true
}

// unit is an indivisible piece of a reply with the separator that joins it
// to the previous unit in the same chunk.
type unit struct {
	md, plain string
	sep       string
}

func (u unit) fits(limit int) bool { return TextLen(u.md) <= limit && TextLen(u.plain) <= limit }

// FormatAnswer converts a model's Markdown answer to MarkdownV2 and splits
// it into chunks of at most limit UTF-16 code units (limit <= 0 means
// MaxMessageLen). Chunks break between paragraphs when they can, else
// between lines, else between words, else between characters; a code block
// is never left open: one that does not fit is split into several complete
// code blocks at line boundaries. An empty answer yields no chunks. Pure.
func FormatAnswer(answer string, limit int) []Chunk {
	if limit <= 0 {
		limit = MaxMessageLen
	}
	answer = cleanText(answer)
	var units []unit
	for i, bl := range parseBlocks(answer) {
		sep := "\n\n"
		if i == 0 {
			sep = ""
		}
		units = append(units, blockUnits(bl, sep, limit)...)
	}
	return pack(units, limit)
}

// blockUnits renders one block, splitting it into several units when it
// does not fit limit.
func blockUnits(bl block, sep string, limit int) []unit {
	if bl.code {
		md, plain := renderCode(bl.lang, bl.text)
		if u := (unit{md: md, plain: plain, sep: sep}); u.fits(limit) {
			return []unit{u}
		}
		// Each piece becomes a complete code block of its own.
		overhead := TextLen("```"+bl.lang+"\n") + TextLen("\n```")
		var out []unit
		for _, piece := range splitText(bl.text, limit-overhead, escapeCode) {
			md, plain := renderCode(bl.lang, piece)
			out = append(out, unit{md: md, plain: plain, sep: sep})
			sep = "\n"
		}
		return out
	}
	if u := (unit{md: renderInline(bl.text), plain: bl.text, sep: sep}); u.fits(limit) {
		return []unit{u}
	}
	var out []unit
	for _, piece := range splitText(bl.text, limit, renderInline) {
		out = append(out, unit{md: renderInline(piece), plain: piece, sep: sep})
		sep = "\n"
	}
	return out
}

// splitText cuts s into pieces whose rendering (and s itself) fits limit,
// preferring line breaks, then spaces, then any character boundary. The
// separators at the cut (a newline) are dropped; spaces are kept on the left
// piece. Pure.
func splitText(s string, limit int, render func(string) string) []string {
	if limit < 8 {
		limit = 8
	}
	fits := func(p string) bool { return TextLen(p) <= limit && TextLen(render(p)) <= limit }
	var out []string
	for s != "" {
		// A piece is sent as plain text too, so its source fits limit:
		// only that window of s is ever rendered.
		w := prefixWithin(s, limit)
		if w == s && fits(s) {
			out = append(out, s)
			break
		}
		cut := bestCut(w, fits)
		out = append(out, strings.TrimSuffix(s[:cut], "\n"))
		s = s[cut:]
	}
	return out
}

// prefixWithin returns the longest prefix of s of at most limit UTF-16
// code units.
func prefixWithin(s string, limit int) string {
	n := 0
	for i, r := range s {
		if n += max(utf16.RuneLen(r), 1); n > limit {
			return s[:i]
		}
	}
	return s
}

// bestCut returns the byte index after the longest prefix of s that fits,
// ending at a newline if any such prefix does, else at a space, else at a
// rune boundary. It always returns at least one rune.
func bestCut(s string, fits func(string) bool) int {
	// Longest fitting prefix by rune boundary (binary search on runes).
	idx := runeStarts(s)
	lo, hi := 1, len(idx)-1 // idx[k] is the byte offset after k runes
	best := idx[1]
	for lo <= hi {
		mid := (lo + hi) / 2
		if fits(s[:idx[mid]]) {
			best = idx[mid]
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	// A shorter prefix can render longer (a cut "**" is escaped), so the
	// preferred cut is checked again.
	if nl := strings.LastIndexByte(s[:best], '\n'); nl > 0 && fits(s[:nl]) {
		return nl + 1
	}
	if sp := strings.LastIndexByte(s[:best], ' '); sp > 0 && fits(s[:sp+1]) {
		return sp + 1
	}
	return best
}

// runeStarts returns the byte offsets 0, after rune 1, …, len(s).
func runeStarts(s string) []int {
	idx := make([]int, 0, len(s)+1)
	for i := range s {
		idx = append(idx, i)
	}
	return append(idx, len(s))
}

// pack joins units greedily into chunks within limit.
func pack(units []unit, limit int) []Chunk {
	var out []Chunk
	var md, plain strings.Builder
	for _, u := range units {
		if md.Len() > 0 || plain.Len() > 0 {
			if TextLen(md.String())+TextLen(u.sep)+TextLen(u.md) <= limit &&
				TextLen(plain.String())+TextLen(u.sep)+TextLen(u.plain) <= limit {
				md.WriteString(u.sep)
				md.WriteString(u.md)
				plain.WriteString(u.sep)
				plain.WriteString(u.plain)
				continue
			}
			out = append(out, Chunk{Markdown: md.String(), Plain: plain.String()})
			md.Reset()
			plain.Reset()
		}
		md.WriteString(u.md)
		plain.WriteString(u.plain)
	}
	if md.Len() > 0 || plain.Len() > 0 {
		out = append(out, Chunk{Markdown: md.String(), Plain: plain.String()})
	}
	return out
}

// Artifact is what a reply shows of one artifact of a job.
type Artifact struct {
	// ID is the handle for /artifact <id>.
	ID string
	// Name is the file name the worker gave; may be empty.
	Name string
	// MediaType is the MIME type; empty shows as "application/octet-stream".
	MediaType string
	// Bytes is the size in bytes.
	Bytes int64
	// SHA256 is the lowercase hex digest, or "" when unknown; the first 12
	// digits are shown.
	SHA256 string
	// Summary is a one-line description; may be empty.
	Summary string
}

// maxArtifactField caps each server-supplied value on an artifact line, in
// characters.
const maxArtifactField = 80

// ArtifactLine renders one artifact as a single line:
//
//	📎 report-1 · application/pdf · 12.3 KiB · sha256 9f2c1a2b3c4d · "CI results"
//
// Values come from the worker and are untrusted: each is stripped of line
// breaks and control characters and clipped. Pure.
func ArtifactLine(a Artifact) (md, plain string) {
	media := oneLine(a.MediaType, maxArtifactField)
	if media == "" {
		media = "application/octet-stream"
	}
	parts := []string{"📎 " + oneLine(a.ID, maxArtifactField)}
	if name := oneLine(a.Name, maxArtifactField); name != "" && name != a.ID {
		parts = append(parts, name)
	}
	parts = append(parts, media, HumanBytes(a.Bytes))
	if len(a.SHA256) >= 12 {
		parts = append(parts, "sha256 "+oneLine(a.SHA256[:12], 12))
	}
	if s := oneLine(a.Summary, maxArtifactField); s != "" {
		parts = append(parts, strconv.Quote(s))
	}
	plain = strings.Join(parts, " · ")
	return EscapeMarkdownV2(plain), plain
}

// oneLine strips control characters and line breaks from s and clips it to
// max characters.
func oneLine(s string, max int) string {
	s = cleanText(s)
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}

// HumanBytes renders a size: "512 B", "12.3 KiB", "4.0 MiB", "1.2 GiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}

// Footer renders the last line of a reply: tokens, estimated cost and
// duration, e.g. "1,234 tokens · $0.0123 · 4.2 s". Zero cost is omitted
// (unknown prices). Pure.
func Footer(promptTokens, completionTokens int64, costUSD float64, d time.Duration) string {
	parts := []string{Thousands(promptTokens+completionTokens) + " tokens"}
	if costUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", costUSD))
	}
	parts = append(parts, Seconds(d))
	return strings.Join(parts, " · ")
}

// Seconds renders a duration as "0.4 s", "12 s" or "3 min 5 s".
func Seconds(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	default:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
}

// Thousands renders n with "," between groups of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Reply is a job's answer with what follows it.
type Reply struct {
	// Answer is the model's final answer (Markdown).
	Answer string
	// Artifacts get one line each after the answer.
	Artifacts []Artifact
	// Footer is the plain-text last line (see Footer); "" for none.
	Footer string
}

// FormatReply renders r as chunks within limit (<= 0 means MaxMessageLen):
// the answer (FormatAnswer), then one line per artifact, then the footer in
// italics. The metadata lines follow the answer in its last chunk when they
// fit there. Pure.
func FormatReply(r Reply, limit int) []Chunk {
	if limit <= 0 {
		limit = MaxMessageLen
	}
	chunks := FormatAnswer(r.Answer, limit)
	var units []unit
	for _, a := range r.Artifacts {
		md, plain := ArtifactLine(a)
		units = append(units, unit{md: md, plain: plain, sep: "\n"})
	}
	if f := oneLine(r.Footer, 200); f != "" {
		units = append(units, unit{md: "_" + EscapeMarkdownV2(f) + "_", plain: f, sep: "\n"})
	}
	if len(units) == 0 {
		return chunks
	}
	units[0].sep = "\n\n"
	if len(chunks) == 0 {
		units[0].sep = ""
		return pack(units, limit)
	}
	last := chunks[len(chunks)-1]
	all := append([]unit{{md: last.Markdown, plain: last.Plain}}, units...)
	return append(chunks[:len(chunks)-1], pack(all, limit)...)
}
