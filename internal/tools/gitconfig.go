package tools

import (
	"errors"
	"fmt"
	"strings"
)

// gitConfigEntry is one key of a git configuration file: section and name
// lower-cased, sub (the subsection) as written, value nil for a key
// given without "=" (a boolean true).
type gitConfigEntry struct {
	section, sub, name string
	value              *string
	// base is the section as git names it in keys: "section",
	// "section.sub", or a legacy [a.b.c] header's text.
	base string
}

func (e gitConfigEntry) key() string {
	if e.base == "" {
		return e.name // a key before any section, which git reads too
	}
	return e.base + "." + e.name
}

// parseGitConfig reads a git configuration file the way git 2.39's
// config.c (git_parse_source) does: sections [name], [name "sub"] and
// the legacy [name.sub], keys on their own lines or after a section
// header, values with quotes, escapes and backslash-newline
// continuations, comments after # and ;. What git would reject is an
// error: a configuration the classifier cannot read as git does is
// treated as one that may run programs.
func parseGitConfig(b []byte) ([]gitConfigEntry, error) {
	p := &gitConfigParser{b: b}
	if strings.HasPrefix(string(b), "\xef\xbb\xbf") {
		p.i = 3
	}
	var out []gitConfigEntry
	section, sub, base := "", "", ""
	comment := false
	for {
		c := p.next()
		if c == '\n' {
			if p.eof {
				return out, nil
			}
			comment = false
			continue
		}
		if comment || isConfigSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		if c == '[' {
			s, ss, err := p.header()
			if err != nil {
				return nil, p.errorf("bad section header: %v", err)
			}
			section, sub, base = s, ss, s
			if p.extended {
				base = s + "." + ss
			} else if sec, rest, ok := strings.Cut(s, "."); ok {
				// The legacy [section.sub] form: the whole name
				// lower-cased, split at its first dot.
				section, sub = sec, rest
			}
			continue
		}
		if !isAlpha(c) {
			return nil, p.errorf("bad config line")
		}
		name := []byte{lower(c)}
		for {
			c = p.next()
			if p.eof || !isKeyChar(c) {
				break
			}
			name = append(name, lower(c))
		}
		for c == ' ' || c == '\t' {
			c = p.next()
		}
		e := gitConfigEntry{section: section, sub: sub, name: string(name), base: base}
		if c != '\n' {
			if c != '=' {
				return nil, p.errorf("bad config line after key %s", e.key())
			}
			v, err := p.value()
			if err != nil {
				return nil, p.errorf("key %s: %v", e.key(), err)
			}
			e.value = &v
		}
		out = append(out, e)
		if p.eof {
			return out, nil
		}
	}
}

type gitConfigParser struct {
	b    []byte
	i    int
	line int
	eof  bool
	// extended is set when the last header was [section "sub"].
	extended bool
}

// next is git's get_next_char: "\r\n" reads as "\n", and the end of the
// input as a "\n" with eof set.
func (p *gitConfigParser) next() byte {
	if p.i >= len(p.b) {
		p.eof = true
		return '\n'
	}
	c := p.b[p.i]
	p.i++
	if c == '\r' && p.i < len(p.b) && p.b[p.i] == '\n' {
		c = '\n'
		p.i++
	}
	if c == '\n' {
		p.line++
	}
	return c
}

func (p *gitConfigParser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line+1, fmt.Sprintf(format, args...))
}

// header reads a section header after its "[".
func (p *gitConfigParser) header() (string, string, error) {
	var name []byte
	for {
		c := p.next()
		if p.eof {
			return "", "", errors.New("unterminated")
		}
		if c == ']' {
			p.extended = false
			return string(name), "", nil
		}
		if isConfigSpace(c) {
			p.extended = true
			return p.extendedHeader(string(name))
		}
		if !isKeyChar(c) && c != '.' {
			return "", "", fmt.Errorf("character %q in a section name", c)
		}
		name = append(name, lower(c))
	}
}

// extendedHeader reads the quoted subsection of [section "sub"].
func (p *gitConfigParser) extendedHeader(section string) (string, string, error) {
	c := p.next()
	for isConfigSpace(c) && c != '\n' {
		c = p.next()
	}
	if c != '"' {
		return "", "", errors.New("a subsection must be quoted")
	}
	var sub []byte
	for {
		c = p.next()
		if c == '\n' {
			return "", "", errors.New("unterminated subsection")
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			c = p.next()
			if c == '\n' {
				return "", "", errors.New("unterminated subsection")
			}
		}
		sub = append(sub, c)
	}
	if p.next() != ']' {
		return "", "", errors.New("no ] after the subsection")
	}
	return section, string(sub), nil
}

// value is git's parse_value: it ends at an unquoted, unescaped newline.
func (p *gitConfigParser) value() (string, error) {
	var v []byte
	quote, comment, space := false, false, 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return "", errors.New("unterminated quote")
			}
			return string(v), nil
		}
		if comment {
			continue
		}
		if isConfigSpace(c) && !quote {
			if len(v) > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			v = append(v, ' ')
		}
		if c == '\\' {
			c = p.next()
			switch c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", fmt.Errorf("bad escape \\%c", c)
			}
			v = append(v, c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		v = append(v, c)
	}
}

// isConfigSpace is C's isspace, which git uses.
func isConfigSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isKeyChar(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '-' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
