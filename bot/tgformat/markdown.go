// Package tgformat turns a model's Markdown answer into Telegram messages:
// HTML for parse_mode HTML (https://core.telegram.org/bots/api#html-style)
// with the same text as plain text, for when Telegram rejects the HTML,
// split into chunks within Telegram's message limit.
//
// The Markdown is parsed by goldmark (CommonMark plus the GFM tables,
// strikethrough, task lists and autolinks), so what models write — nested
// emphasis, code in emphasis and headings, links with parentheses and
// escapes, nested fences, tables, blockquotes, lists — is read as a
// CommonMark renderer reads it, not by hand-written scanning. HTML is the
// output mode because it needs only '<', '>', '&' and '"' escaped and
// marks every entity's end explicitly, where MarkdownV2 needs 18
// characters escaped depending on context and reads "__" and "_" runs
// ambiguously.
package tgformat

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"

	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Mode is the parse_mode of Chunk.HTML.
const Mode = "HTML"

// MaxMessageLen is Telegram's limit on one message's text, in UTF-16 code
// units. Chunks are measured before entity parsing (tags included), so a
// chunk within it is within Telegram's limit.
const MaxMessageLen = 4096

// Chunk is one message in two renderings: HTML for parse_mode HTML, and
// Plain, the same visible text sent without a parse mode when Telegram
// rejects the HTML.
type Chunk struct {
	HTML  string
	Plain string
}

var md = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList, extension.Linkify))

// EscapeHTML escapes s for Telegram HTML text and attribute values.
// Invalid UTF-8 becomes U+FFFD and NUL bytes are dropped.
func EscapeHTML(s string) string {
	return htmlEscaper.Replace(CleanText(s))
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// CleanText makes untrusted text safe to measure and send: valid UTF-8, no
// NUL, "\r\n" as "\n".
func CleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s
}

// TextLen is the length of s as Telegram counts it: UTF-16 code units.
func TextLen(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// unit is an indivisible piece of a reply with the separator that joins it
// to the previous unit in the same chunk. A pre unit keeps its source so
// an oversize one can be split into several complete pre blocks.
type unit struct {
	html, plain string
	sep         string
	pre         bool
	lang        string
	raw         string
}

func (u unit) fits(limit int) bool { return TextLen(u.html) <= limit && TextLen(u.plain) <= limit }

// out accumulates one rendering in both forms. indent follows every line
// break written with text (list items' continuation lines); nonspace
// counts the texts written that were not all white space, so children can
// drop a child that rendered to nothing without rescanning it.
type out struct {
	h, p     bytes.Buffer
	indent   string
	nonspace int
}

func (o *out) text(s string) {
	if o.indent != "" && strings.IndexByte(s, '\n') >= 0 {
		s = strings.ReplaceAll(s, "\n", "\n"+o.indent)
	}
	o.h.WriteString(htmlEscaper.Replace(s))
	o.p.WriteString(s)
	if strings.TrimSpace(s) != "" {
		o.nonspace++
	}
}

// sub is an empty out for a nested rendering that is copied into o.
func (o *out) sub() out { return out{indent: o.indent} }

// add copies a nested rendering into o.
func (o *out) add(in *out) {
	o.h.Write(in.h.Bytes())
	o.p.Write(in.p.Bytes())
	o.nonspace += in.nonspace
}

func (o *out) tag(s string) { o.h.WriteString(s) }

// renderer walks goldmark's AST.
type renderer struct {
	src     []byte
	inLink  bool
	inQuote bool
	inStyle int // depth of bold, italic and strikethrough
	inBold  int // depth of bold (headings included)
	lists   int // depth of list items
}

// maxIndent is the deepest list level indented; deeper levels are shown
// at that indent, which keeps rendering linear in the answer's size.
const maxIndent = 8

// styled renders the inlines of a bold, italic or strikethrough node.
func (r *renderer) styled(o *out, n ast.Node) {
	r.inStyle++
	r.inlines(o, n)
	r.inStyle--
}

// Answer renders a Markdown answer as chunks of at most limit UTF-16 code
// units in both renderings (limit <= 0 means MaxMessageLen). Chunks break
// between top-level blocks (and list items) when they can; a code block
// or table too long for one message becomes several complete pre blocks;
// any other block too long for one message is sent as plain text split at
// lines, then spaces. An empty answer yields no chunks. Pure.
func Answer(answer string, limit int) []Chunk {
	if limit <= 0 {
		limit = MaxMessageLen
	}
	return pack(answerUnits(answer, limit), limit)
}

func answerUnits(answer string, limit int) []unit {
	src := []byte(CleanText(answer))
	doc := md.Parser().Parse(text.NewReader(src))
	r := &renderer{src: src}
	var units []unit
	sep := ""
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		var us []unit
		if l, ok := n.(*ast.List); ok {
			i := l.Start
			for it := l.FirstChild(); it != nil; it = it.NextSibling() {
				var o out
				r.listItem(&o, l, it, i, "")
				i++
				us = append(us, unit{html: o.h.String(), plain: o.p.String(), sep: "\n"})
			}
		} else {
			var o out
			u := unit{}
			r.block(&o, n, &u)
			u.html, u.plain, u.sep = o.h.String(), o.p.String(), "\n"
			us = append(us, u)
		}
		for i, u := range us {
			if strings.TrimSpace(u.plain) == "" {
				continue
			}
			if i == 0 || sep == "" {
				u.sep = sep
			}
			units = append(units, splitUnit(u, limit)...)
			sep = "\n\n"
		}
	}
	return units
}

// splitUnit returns u, or when it does not fit limit, pieces that do.
func splitUnit(u unit, limit int) []unit {
	if u.fits(limit) {
		return []unit{u}
	}
	var out []unit
	sep := u.sep
	if u.pre {
		open, close := preTags(u.lang)
		overhead := TextLen(open) + TextLen(close)
		for _, piece := range splitText(u.raw, limit-overhead, EscapeHTML) {
			if strings.TrimSpace(piece) == "" {
				continue // Telegram refuses an empty message
			}
			out = append(out, unit{html: open + EscapeHTML(piece) + close, plain: piece, sep: sep})
			sep = "\n"
		}
		return out
	}
	for _, piece := range splitText(u.plain, limit, EscapeHTML) {
		if strings.TrimSpace(piece) == "" {
			continue // Telegram refuses an empty message
		}
		out = append(out, unit{html: EscapeHTML(piece), plain: piece, sep: sep})
		sep = "\n"
	}
	return out
}

func preTags(lang string) (string, string) {
	if lang == "" {
		return "<pre>", "</pre>"
	}
	return `<pre><code class="language-` + lang + `">`, "</code></pre>"
}

// block renders a block node. u, when not nil, learns whether the block is
// a pre block (for splitting).
func (r *renderer) block(o *out, n ast.Node, u *unit) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(o, n)
	case *ast.Heading:
		inner := o.sub()
		r.inBold++
		r.styled(&inner, n)
		r.inBold--
		if inner.p.Len() == 0 {
			return
		}
		o.tag("<b>")
		o.add(&inner)
		o.tag("</b>")
	case *ast.ThematicBreak:
		o.text("———")
	case *ast.FencedCodeBlock:
		r.code(o, sanitizeLang(string(n.Language(r.src))), lines(n, r.src), u)
	case *ast.CodeBlock:
		r.code(o, "", lines(n, r.src), u)
	case *ast.HTMLBlock:
		s := lines(n, r.src)
		if n.HasClosure() {
			s += "\n" + strings.TrimRight(string(n.ClosureLine.Value(r.src)), "\n")
		}
		o.text(strings.TrimRight(s, "\n"))
	case *ast.Blockquote:
		if r.inQuote { // Telegram's blockquotes do not nest
			r.children(o, n, "\n")
			return
		}
		r.inQuote = true
		inner := o.sub()
		r.children(&inner, n, "\n")
		r.inQuote = false
		if inner.nonspace == 0 {
			return
		}
		o.tag("<blockquote>")
		o.add(&inner)
		o.tag("</blockquote>")
	case *ast.List:
		i := n.Start
		first := true
		for it := n.FirstChild(); it != nil; it = it.NextSibling() {
			if !first {
				o.text("\n")
			}
			first = false
			r.listItem(o, n, it, i, "")
			i++
		}
	case *east.Table:
		r.table(o, n, u)
	default:
		r.children(o, n, "\n")
	}
}

// children renders block children joined by sep, dropping children that
// render to nothing (written in place: no copy per nesting level).
func (r *renderer) children(o *out, n ast.Node, sep string) {
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		hMark, pMark, nsMark := o.h.Len(), o.p.Len(), o.nonspace
		if !first {
			o.text(sep)
		}
		sepNS := o.nonspace
		r.block(o, c, nil)
		if o.nonspace == sepNS {
			o.h.Truncate(hMark)
			o.p.Truncate(pMark)
			o.nonspace = nsMark
			continue
		}
		first = false
	}
}

// listItem renders one item with its marker; lines after the first are
// indented under the marker's text (up to maxIndent levels).
func (r *renderer) listItem(o *out, l *ast.List, it ast.Node, num int, _ string) {
	marker := "• "
	if l.IsOrdered() {
		marker = itoa(num) + ". "
	}
	o.text(marker)
	saved := o.indent
	if r.lists < maxIndent {
		o.indent += strings.Repeat(" ", utf8.RuneCountInString(marker))
	}
	r.lists++
	r.children(o, it, "\n")
	r.lists--
	o.indent = saved
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// code renders a code block as pre (plain text inside a blockquote, where
// Telegram allows no pre).
func (r *renderer) code(o *out, lang, body string, u *unit) {
	body = strings.TrimRight(body, "\n")
	if strings.TrimSpace(body) == "" {
		return
	}
	if r.inQuote {
		o.text(body)
		return
	}
	open, close := preTags(lang)
	o.tag(open)
	o.text(body)
	o.tag(close)
	if u != nil {
		u.pre, u.lang, u.raw = true, lang, body
	}
}

// table renders a GFM table as an aligned monospace block.
func (r *renderer) table(o *out, t *east.Table, u *unit) {
	var rows [][]string
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			var inner out // a cell is one line: no indent
			saved := r.inLink
			r.inLink = true // cell text only: no entities inside pre
			r.inlines(&inner, c)
			r.inLink = saved
			cells = append(cells, strings.ReplaceAll(inner.p.String(), "\n", " "))
		}
		rows = append(rows, cells)
	}
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for ri, row := range rows {
		if ri > 0 {
			b.WriteByte('\n')
		}
		for i, c := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
			}
		}
		if ri == 0 {
			b.WriteByte('\n')
			for i, w := range widths {
				if i > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", max(w, 1)))
			}
		}
	}
	r.code(o, "", strings.TrimRight(b.String(), " "), u)
}

// inlines renders the inline children of n.
func (r *renderer) inlines(o *out, n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(o, c)
	}
}

func (r *renderer) inline(o *out, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		if !n.IsRaw() {
			v = unescape(v)
		}
		o.text(string(v))
		if n.SoftLineBreak() || n.HardLineBreak() {
			o.text("\n")
		}
	case *ast.String:
		v := n.Value
		if !n.IsRaw() && !n.IsCode() {
			v = unescape(v)
		}
		o.text(string(v))
	case *ast.CodeSpan:
		s := codeText(n, r.src)
		if strings.TrimSpace(s) == "" {
			o.text(s)
			return
		}
		if r.inLink || r.inStyle > 0 { // code is contained by no other entity
			o.text(s)
			return
		}
		o.tag("<code>")
		o.text(s)
		o.tag("</code>")
	case *ast.Emphasis:
		t := "i"
		if n.Level >= 2 {
			t = "b"
			r.inBold++
			defer func() { r.inBold-- }()
		}
		inner := o.sub()
		r.styled(&inner, n)
		if inner.p.Len() == 0 {
			return
		}
		if t == "b" && r.inBold > 1 { // already bold
			o.add(&inner)
			return
		}
		o.tag("<" + t + ">")
		o.add(&inner)
		o.tag("</" + t + ">")
	case *east.Strikethrough:
		inner := o.sub()
		r.styled(&inner, n)
		if inner.p.Len() == 0 {
			return
		}
		o.tag("<s>")
		o.add(&inner)
		o.tag("</s>")
	case *ast.Link:
		r.link(o, string(unescape(n.Destination)), n, "")
	case *ast.AutoLink:
		u := string(n.URL(r.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(u, "mailto:") {
			u = "mailto:" + u
		}
		r.link(o, u, nil, string(n.Label(r.src)))
	case *ast.Image:
		o.text("🖼 ")
		r.link(o, string(unescape(n.Destination)), n, "")
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			o.text(string(seg.Value(r.src)))
		}
	case *east.TaskCheckBox:
		if n.IsChecked {
			o.text("☑ ")
		} else {
			o.text("☐ ")
		}
	default:
		r.inlines(o, n)
	}
}

// link renders a link: an "a" entity for an http(s), tg or mailto URL
// outside another link, else its text followed by the URL in parentheses.
func (r *renderer) link(o *out, dest string, n ast.Node, label string) {
	inner := o.sub()
	saved := r.inLink
	r.inLink = true
	if n != nil {
		r.inlines(&inner, n)
	} else {
		inner.text(label)
	}
	r.inLink = saved
	shown := inner.p.String()
	ok := linkable(dest)
	if !ok || r.inLink {
		if shown == "" {
			o.text(dest)
			return
		}
		o.add(&inner)
		if dest != "" && dest != shown {
			o.text(" (" + dest + ")")
		}
		return
	}
	if strings.TrimSpace(shown) == "" {
		inner = o.sub()
		inner.text(dest)
	}
	o.tag(`<a href="` + htmlEscaper.Replace(dest) + `">`)
	o.add(&inner)
	o.tag("</a>")
}

// linkable reports whether Telegram takes u as a link: http(s), tg or
// mailto, no spaces or control characters, at most 2048 bytes.
func linkable(u string) bool {
	if len(u) > 2048 || strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	for _, p := range []string{"https://", "http://", "tg://", "mailto:"} {
		if len(u) > len(p) && strings.EqualFold(u[:len(p)], p) {
			return true
		}
	}
	return false
}

// unescape resolves CommonMark backslash escapes and entity references.
func unescape(v []byte) []byte {
	if bytes.IndexByte(v, '\\') >= 0 {
		v = util.UnescapePunctuations(v)
	}
	if bytes.IndexByte(v, '&') >= 0 {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(v))
	}
	return v
}

// codeText is the text of a code span (its children's segments).
func codeText(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		}
	}
	return b.String()
}

// lines joins a block's source lines.
func lines(n ast.Node, src []byte) string {
	var b strings.Builder
	ls := n.Lines()
	for i := 0; i < ls.Len(); i++ {
		seg := ls.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// sanitizeLang keeps a code block's language only when it is a plain word
// (letters, digits, "+", "-", "_", "#", "."), at most 32 bytes.
func sanitizeLang(s string) string {
	if i := strings.IndexAny(s, " \t{"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 32 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("+-_#.", c) >= 0) {
			return ""
		}
	}
	return s
}
