package bottest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseHTML parses s the way the Bot API documents parse_mode HTML
// (https://core.telegram.org/bots/api#html-style) and returns the text the
// user sees, or an error in Telegram's words ("can't parse entities: …")
// for what Telegram rejects:
//
//   - only the documented tags: b, strong, i, em, u, ins, s, strike, del,
//     span class="tg-spoiler", tg-spoiler, a href, code, pre (with an
//     optional inner code class="language-…"), blockquote (optionally
//     expandable); any other tag is "Unsupported start tag";
//   - every '<', '>' and '&' that is not part of a tag or an entity must be
//     escaped; the only named entities are &lt; &gt; &amp; &quot;, and
//     numeric ones (&#38; &#x26;) are accepted;
//   - tags must close in order;
//   - entity nesting as documented ("bold, italic, underline,
//     strikethrough, and spoiler entities can contain and can be part of
//     any other entities, except pre and code"; "blockquote … can't be
//     nested"; "all other entities can't contain each other"): pre and
//     code contain no other entity (except pre's single inner code) and
//     are inside no style, blockquotes do not nest or hold a pre, and a
//     link holds no link, code, pre or blockquote.
//
// It is stricter than Telegram where Telegram is lenient (a bare '&' or
// '>', attributes other than those listed), so text that passes here is
// accepted there.
func ParseHTML(s string) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("can't parse entities: "+format, args...)
	}
	if !utf8.ValidString(s) {
		return fail("strings must be encoded in UTF-8")
	}
	var out strings.Builder
	var stack []openTag
	inside := func(names ...string) bool {
		for _, o := range stack {
			for _, n := range names {
				if o.name == n {
					return true
				}
			}
		}
		return false
	}
	i := 0
	for i < len(s) {
		c := s[i]
		switch c {
		case '>':
			return fail("character '>' must be escaped as &gt; (byte offset %d)", i)
		case '&':
			end := strings.IndexByte(s[i:], ';')
			if end < 0 || end > 10 {
				return fail("character '&' must be escaped as &amp; (byte offset %d)", i)
			}
			ent := s[i+1 : i+end]
			switch {
			case ent == "lt":
				out.WriteByte('<')
			case ent == "gt":
				out.WriteByte('>')
			case ent == "amp":
				out.WriteByte('&')
			case ent == "quot":
				out.WriteByte('"')
			case strings.HasPrefix(ent, "#x") || strings.HasPrefix(ent, "#X"):
				n, err := strconv.ParseUint(ent[2:], 16, 32)
				if err != nil || n == 0 || !utf8.ValidRune(rune(n)) {
					return fail("unsupported HTML entity &%s; at byte offset %d", ent, i)
				}
				out.WriteRune(rune(n))
			case strings.HasPrefix(ent, "#"):
				n, err := strconv.ParseUint(ent[1:], 10, 32)
				if err != nil || n == 0 || !utf8.ValidRune(rune(n)) {
					return fail("unsupported HTML entity &%s; at byte offset %d", ent, i)
				}
				out.WriteRune(rune(n))
			default:
				return fail("unsupported HTML entity &%s; at byte offset %d", ent, i)
			}
			i += end + 1
			continue
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fail("unclosed start tag at byte offset %d", i)
			}
			tag := s[i+1 : i+end]
			if strings.HasPrefix(tag, "/") {
				name := strings.ToLower(strings.TrimSpace(tag[1:]))
				if len(stack) == 0 || stack[len(stack)-1].name != name {
					return fail("unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, top(stack), name)
				}
				stack = stack[:len(stack)-1]
				i += end + 1
				continue
			}
			name, attrs, err := splitTag(tag)
			if err != nil {
				return fail("%v at byte offset %d", err, i)
			}
			switch name {
			case "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "tg-spoiler":
				if attrs != "" {
					return fail("tag \"%s\" must have no attributes at byte offset %d", name, i)
				}
			case "span":
				if attrs != `class="tg-spoiler"` {
					return fail("tag \"span\" must have class \"tg-spoiler\" at byte offset %d", i)
				}
			case "a":
				href, ok := strings.CutPrefix(attrs, `href="`)
				if !ok || !strings.HasSuffix(href, `"`) || strings.ContainsAny(href[:len(href)-1], `"<>`) {
					return fail("tag \"a\" needs one href=\"…\" attribute at byte offset %d", i)
				}
				u := strings.NewReplacer("&amp;", "&", "&quot;", `"`, "&lt;", "<", "&gt;", ">").Replace(href[:len(href)-1])
				if !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "tg://") || strings.HasPrefix(u, "mailto:")) || strings.ContainsAny(u, " \n\t") {
					return fail("wrong HTTP URL %q at byte offset %d", u, i)
				}
				if inside("a") {
					return fail("links can't be nested (byte offset %d)", i)
				}
			case "code":
				if attrs != "" && !(strings.HasPrefix(attrs, `class="language-`) && strings.HasSuffix(attrs, `"`) && len(stack) > 0 && stack[len(stack)-1].name == "pre") {
					return fail("tag \"code\" may have a class only directly inside \"pre\" (byte offset %d)", i)
				}
			case "pre":
				if attrs != "" {
					return fail("tag \"pre\" must have no attributes at byte offset %d", i)
				}
			case "blockquote":
				if attrs != "" && attrs != "expandable" {
					return fail("tag \"blockquote\" may only be expandable at byte offset %d", i)
				}
				if inside("blockquote") {
					return fail("blockquotes can't be nested (byte offset %d)", i)
				}
			default:
				return fail("unsupported start tag \"%s\" at byte offset %d", name, i)
			}
			if inside("code") || (inside("pre") && !(name == "code" && stack[len(stack)-1].name == "pre" && !strings.Contains(s[stack[len(stack)-1].at:i], "<code"))) {
				return fail("pre and code entities can't contain other entities (\"%s\" at byte offset %d)", name, i)
			}
			if (name == "code" && !inside("pre") || name == "pre") && inside("b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler") {
				return fail("bold, italic, underline, strikethrough and spoiler can't contain \"%s\" (byte offset %d)", name, i)
			}
			if inside("blockquote") && name == "pre" {
				return fail("a blockquote can't contain \"pre\" (byte offset %d)", i)
			}
			if inside("a") && (name == "code" || name == "pre" || name == "blockquote") {
				return fail("a link can't contain \"%s\" (byte offset %d)", name, i)
			}
			if (name == "pre" || name == "blockquote") && inside("a") {
				return fail("a link can't contain \"%s\" (byte offset %d)", name, i)
			}
			stack = append(stack, openTag{name: name, at: i})
			i += end + 1
			continue
		}
		out.WriteByte(c)
		i++
	}
	if len(stack) > 0 {
		return fail("can't find end tag corresponding to start tag \"%s\" (byte offset %d)", stack[len(stack)-1].name, stack[len(stack)-1].at)
	}
	return out.String(), nil
}

type openTag struct {
	name string
	at   int
}

func top(stack []openTag) string {
	if len(stack) == 0 {
		return ""
	}
	return stack[len(stack)-1].name
}

// splitTag splits "a href=\"x\"" into its lower-case name and the rest.
func splitTag(tag string) (name, attrs string, err error) {
	name, attrs, _ = strings.Cut(tag, " ")
	name = strings.ToLower(name)
	if name == "" {
		return "", "", fmt.Errorf("empty tag")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r == '-' || r >= '0' && r <= '9') {
			return "", "", fmt.Errorf("unsupported start tag %q", name)
		}
	}
	return name, strings.TrimSpace(attrs), nil
}
