package bottest

import (
	"fmt"
	"strings"
)

// CheckMarkdownV2 parses s the way the Bot API parses parse_mode
// MarkdownV2 and returns an error in Telegram's words ("can't parse
// entities: …") for text Telegram would reject: a reserved character
// outside an entity that is not escaped, an entity left open, an escape of
// a character outside 1..126, or an unescaped '`' or '\' inside code.
//
// It covers the entities odek produces (bold, italic, underline,
// strikethrough, spoiler, inline code, pre blocks, inline links) and is
// stricter than Telegram where Telegram is lenient, so text that passes
// here is accepted there.
func CheckMarkdownV2(s string) error {
	open := map[string]int{} // marker -> byte offset where it opened
	i := 0
	fail := func(format string, args ...any) error {
		return fmt.Errorf("can't parse entities: "+format, args...)
	}
	toggle := func(m string) {
		if _, ok := open[m]; ok {
			delete(open, m)
		} else {
			open[m] = i
		}
	}
	inLinkText := -1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) || s[i+1] < 1 || s[i+1] > 126 {
				return fail("character at byte offset %d is escaped but nothing escapable follows", i)
			}
			i += 2
			continue
		case strings.HasPrefix(s[i:], "```"):
			end, err := codeEnd(s, i+3, "```")
			if err != nil {
				return fail("pre entity opened at byte offset %d: %v", i, err)
			}
			i = end + 3
			continue
		case c == '`':
			end, err := codeEnd(s, i+1, "`")
			if err != nil {
				return fail("code entity opened at byte offset %d: %v", i, err)
			}
			i = end + 1
			continue
		case strings.HasPrefix(s[i:], "__"):
			toggle("__")
			i += 2
			continue
		case strings.HasPrefix(s[i:], "||"):
			toggle("||")
			i += 2
			continue
		case c == '*' || c == '_' || c == '~':
			toggle(string(c))
		case c == '[':
			if inLinkText >= 0 {
				return fail("character '[' is reserved and must be escaped with the preceding '\\' (byte offset %d)", i)
			}
			inLinkText = i
		case c == ']':
			if inLinkText < 0 {
				return fail("character ']' is reserved and must be escaped with the preceding '\\' (byte offset %d)", i)
			}
			inLinkText = -1
			if i+1 >= len(s) || s[i+1] != '(' {
				return fail("link at byte offset %d has no (url)", i)
			}
			j := i + 2
			for j < len(s) && s[j] != ')' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return fail("link url at byte offset %d is not closed", i)
			}
			i = j + 1
			continue
		case strings.IndexByte("()#+-=|{}.!>", c) >= 0:
			return fail("character '%c' is reserved and must be escaped with the preceding '\\' (byte offset %d)", c, i)
		}
		i++
	}
	if inLinkText >= 0 {
		return fail("link text opened at byte offset %d is not closed", inLinkText)
	}
	for m, at := range open {
		return fail("can't find end of %q entity at byte offset %d", m, at)
	}
	return nil
}

// codeEnd finds the closing marker of a code or pre entity starting at
// from, checking that every '`' and '\' inside is escaped.
func codeEnd(s string, from int, marker string) (int, error) {
	for j := from; j < len(s); j++ {
		switch {
		case s[j] == '\\':
			if j+1 >= len(s) || (s[j+1] != '`' && s[j+1] != '\\') {
				return 0, fmt.Errorf("unescaped '\\' inside at byte offset %d", j)
			}
			j++
		case strings.HasPrefix(s[j:], marker):
			if j == from && marker == "`" {
				return 0, fmt.Errorf("empty code entity")
			}
			return j, nil
		case s[j] == '`':
			return 0, fmt.Errorf("unescaped '`' inside at byte offset %d", j)
		}
	}
	return 0, fmt.Errorf("not closed")
}
