package tgformat

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func runeLen16(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
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
		if n += max(runeLen16(r), 1); n > limit {
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
	var h, plain strings.Builder
	for _, u := range units {
		if h.Len() > 0 || plain.Len() > 0 {
			if TextLen(h.String())+TextLen(u.sep)+TextLen(u.html) <= limit &&
				TextLen(plain.String())+TextLen(u.sep)+TextLen(u.plain) <= limit {
				h.WriteString(u.sep)
				h.WriteString(u.html)
				plain.WriteString(u.sep)
				plain.WriteString(u.plain)
				continue
			}
			out = append(out, Chunk{HTML: h.String(), Plain: plain.String()})
			h.Reset()
			plain.Reset()
		}
		h.WriteString(u.html)
		plain.WriteString(u.plain)
	}
	if h.Len() > 0 || plain.Len() > 0 {
		out = append(out, Chunk{HTML: h.String(), Plain: plain.String()})
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
func ArtifactLine(a Artifact) (html, plain string) {
	media := OneLine(a.MediaType, maxArtifactField)
	if media == "" {
		media = "application/octet-stream"
	}
	parts := []string{"📎 " + OneLine(a.ID, maxArtifactField)}
	if name := OneLine(a.Name, maxArtifactField); name != "" && name != a.ID {
		parts = append(parts, name)
	}
	parts = append(parts, media, HumanBytes(a.Bytes))
	if len(a.SHA256) >= 12 {
		parts = append(parts, "sha256 "+OneLine(a.SHA256[:12], 12))
	}
	if s := OneLine(a.Summary, maxArtifactField); s != "" {
		parts = append(parts, strconv.Quote(s))
	}
	plain = strings.Join(parts, " · ")
	return EscapeHTML(plain), plain
}

// OneLine strips control characters and line breaks from s and clips it to
// max characters.
func OneLine(s string, max int) string {
	s = CleanText(s)
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

// Reply is a job's outcome as one message (or one series of chunks).
type Reply struct {
	// Head is a plain notice shown first ("⏹ Stopped."); may be empty.
	Head string
	// Answer is the model's final answer (Markdown).
	Answer string
	// Artifacts get one line each after the answer.
	Artifacts []Artifact
	// Footer is the plain-text last line (see Footer); "" for none.
	Footer string
}

// FormatReply renders r as chunks within limit (<= 0 means MaxMessageLen):
// the head, the answer (Answer), then one line per artifact, then the
// footer in italics, packed together so a short reply is one message.
// Pure.
func FormatReply(r Reply, limit int) []Chunk {
	if limit <= 0 {
		limit = MaxMessageLen
	}
	var units []unit
	if h := strings.TrimSpace(CleanText(r.Head)); h != "" {
		units = append(units, splitUnit(unit{html: EscapeHTML(h), plain: h}, limit)...)
	}
	for i, u := range answerUnits(r.Answer, limit) {
		if i == 0 && len(units) > 0 {
			u.sep = "\n\n"
		}
		units = append(units, u)
	}
	metaAt := len(units)
	for _, a := range r.Artifacts {
		h, plain := ArtifactLine(a)
		units = append(units, unit{html: h, plain: plain, sep: "\n"})
	}
	if f := OneLine(r.Footer, 200); f != "" {
		units = append(units, unit{html: "<i>" + EscapeHTML(f) + "</i>", plain: f, sep: "\n"})
	}
	if metaAt < len(units) {
		units[metaAt].sep = "\n\n"
	}
	if len(units) > 0 {
		units[0].sep = ""
	}
	return pack(units, limit)
}
