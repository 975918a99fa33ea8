package artifacts

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Display caps for server-supplied values in metadata lines, in Unicode
// code points. Longer values are cut and end in "…".
const (
	// MaxIDChars is also the validation limit for ids: a longer id is
	// rejected, so the id shown is the id the server sent.
	MaxIDChars        = 128
	MaxMediaTypeChars = 128
	MaxSummaryChars   = 200
	// ShortHashLen is the number of hex digits of sha256 shown.
	ShortHashLen = 12
)

// Marker starts every line odek adds to a tool result; see Neutralize.
const Marker = "[odek"

// MetadataPrefix starts every artifact metadata line.
const MetadataPrefix = "[odek artifact]"

// Neutralize rewrites every occurrence of Marker in server-supplied text
// (the letters "odek" in any case) to "[~odek", so the text cannot imitate
// a line odek adds: a metadata line, the truncation notice, a content
// summary. Text without a '[' is returned unchanged without copying.
func Neutralize(s string) string {
	i := indexMarker(s, 0)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	last := 0
	for ; i >= 0; i = indexMarker(s, i+1) {
		b.WriteString(s[last : i+1])
		b.WriteByte('~')
		last = i + 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// Markers counts the occurrences of Marker in s (any case): the code points
// Neutralize adds to s, one '~' each. A caller that measures server text
// after neutralising it subtracts them to get the length the server sent.
func Markers(s string) int {
	n := 0
	for i := indexMarker(s, 0); i >= 0; i = indexMarker(s, i+1) {
		n++
	}
	return n
}

// indexMarker returns the index of the next "[odek" (any case) at or after
// from, or -1.
func indexMarker(s string, from int) int {
	for from < len(s) {
		j := strings.IndexByte(s[from:], '[')
		if j < 0 {
			return -1
		}
		i := from + j
		if i+len(Marker) <= len(s) && strings.EqualFold(s[i+1:i+len(Marker)], "odek") {
			return i
		}
		from = i + 1
	}
	return -1
}

// sanitizeLine makes a server-supplied value fit on one line: invalid UTF-8
// becomes U+FFFD, whitespace controls (tab, newline, U+2028, ...) become a
// space, other control and format characters (bidi overrides, zero-width
// characters) are removed.
func sanitizeLine(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 || r >= 0x7f && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp)) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || unicode.In(r, unicode.Zl, unicode.Zp):
			b.WriteByte(' ')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// clip cuts s to at most n code points, ending in "…" when it was cut.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n || utf8.RuneCountInString(s) <= n { // bytes ≥ code points
		return s
	}
	return clipRunes(s, n-1) + "…"
}

// displayValue prepares a server-supplied value for a metadata line.
func displayValue(s string, max int) string {
	return strconv.Quote(clip(Neutralize(sanitizeLine(s)), max))
}

// MetadataLine renders one validated ref as the single line the model sees:
//
//	[odek artifact] id="report-1" media_type="application/xml" size_bytes=21453211 sha256=9f2c1a2b3c4d summary="CI results"
//
// sha256 (the first ShortHashLen hex digits) is omitted when the server gave
// none, summary when empty. The path and the content never appear.
func (r *Ref) MetadataLine() string {
	var b strings.Builder
	b.Grow(96 + len(r.ID) + len(r.MediaType) + len(r.Summary))
	b.WriteString(MetadataPrefix)
	b.WriteString(" id=")
	b.WriteString(displayValue(r.ID, MaxIDChars))
	b.WriteString(" media_type=")
	b.WriteString(displayValue(r.MediaType, MaxMediaTypeChars))
	b.WriteString(" size_bytes=")
	b.WriteString(strconv.FormatInt(r.SizeBytes, 10))
	if len(r.SHA256) >= ShortHashLen {
		b.WriteString(" sha256=")
		b.WriteString(r.SHA256[:ShortHashLen])
	}
	if r.Summary != "" {
		b.WriteString(" summary=")
		b.WriteString(displayValue(r.Summary, MaxSummaryChars))
	}
	return b.String()
}

// MetadataLines renders one line per ref, in order.
func MetadataLines(refs []Ref) []string {
	if len(refs) == 0 {
		return nil
	}
	lines := make([]string, len(refs))
	for i := range refs {
		lines[i] = refs[i].MetadataLine()
	}
	return lines
}

// Notice returns the contract's exact truncation notice. server and tool are
// sanitised to one line; observed and limit are code-point counts.
func Notice(server, tool string, observed, limit int) string {
	return fmt.Sprintf("[odek: result truncated — server %q tool %q produced %d chars, exceeding the configured max_result_chars=%d; the full result is available via the retained artifact references, if any]",
		noticeName(server), noticeName(tool), observed, limit)
}

// noticeName keeps names printable and free of quotes so %q adds no
// escapes to valid names.
func noticeName(s string) string {
	return clip(Neutralize(sanitizeLine(s)), 128)
}

// Truncate bounds one tool result's text and appends the metadata lines of
// its validated refs. The limit applies to the text only: body (already
// neutralised, see Neutralize) whose length as the tool produced it is
// observed code points; a negative observed counts body. When observed
// exceeds limit the text is cut and the contract's notice follows it:
//
//	<body cut to fit>\n<notice>\n<metadata line>\n...
//
// so that body and notice together never exceed limit code points (a limit
// below the notice's length keeps only the start of the notice; limit ≤ 0
// keeps no text at all). The metadata lines always follow, whole and
// outside the limit: they are bounded by the number of refs a result may
// carry (Validator.MaxRefs) and by each field's display cap (MaxIDChars,
// MaxMediaTypeChars, MaxSummaryChars). Truncate does not neutralise.
func Truncate(server, tool, body string, observed int, meta []string, limit int) (out string, truncated bool) {
	if observed < 0 {
		observed = utf8.RuneCountInString(body)
	}
	if observed <= limit {
		return joinLines(body, meta), false
	}
	var text string
	if limit > 0 {
		notice := Notice(server, tool, observed, limit)
		noticeRunes := utf8.RuneCountInString(notice)
		switch budget := limit - noticeRunes - 1; {
		case noticeRunes >= limit:
			text = clipRunes(notice, limit)
		case budget > 0 && body != "":
			text = clipRunes(body, budget) + "\n" + notice
		default:
			text = notice
		}
	}
	return joinLines(text, meta), true
}

func joinLines(body string, meta []string) string {
	if len(meta) == 0 {
		return body
	}
	n := len(body)
	for _, l := range meta {
		n += 1 + len(l)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(body)
	for i, l := range meta {
		if i > 0 || body != "" {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
}

// clipRunes returns the first n code points of s.
func clipRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// Rendered is the model-facing text of one tool result.
type Rendered struct {
	// Text is what the model sees (before the untrusted-content wrapper).
	Text string
	// ObservedChars is the code-point count of the text as the tool
	// produced it, what the limit applies to (metadata lines excluded).
	ObservedChars int
	// Truncated reports that Text was cut and carries the notice.
	Truncated bool
}

// Render is the whole rendering of one tool result: Neutralize the server's
// text, cut it to limit code points with the notice naming server and tool
// (Truncate), append one metadata line per validated ref.
func Render(server, tool, text string, refs []Ref, limit int) Rendered {
	observed := utf8.RuneCountInString(text)
	out, cut := Truncate(server, tool, Neutralize(text), observed, MetadataLines(refs), limit)
	return Rendered{Text: out, ObservedChars: observed, Truncated: cut}
}

// DisplayValue prepares a server-supplied value for a line odek adds (a
// metadata line, a content summary): sanitised to one line, neutralised,
// cut to maxChars code points and quoted Go-style, so it can neither end the
// line nor the quoted value nor carry the marker.
func DisplayValue(s string, maxChars int) string {
	return displayValue(s, maxChars)
}
