package tools

import (
	"errors"
	"strings"
)

// This file holds the shell tokenizer behind ClassifyShell. It understands
// enough of POSIX sh (plus the common bash extensions) to find every
// command a line would run: quotes, escapes, operators, redirections,
// here-documents, and command substitutions, whose bodies it hands back
// for recursive classification. It never executes or expands anything.

// errUnbalanced reports an unterminated quote, substitution or expansion.
var errUnbalanced = errors.New("tools: unbalanced quote or substitution in shell command")

type tokKind uint8

const (
	tokWord  tokKind = iota
	tokOp            // | || & && ; ;; ( ) newline |&
	tokRedir         // > >> < << <<- <<< &> &>> >& <& >| <> with optional fd prefix
)

type token struct {
	kind tokKind
	// text is the word with quotes and escapes removed, or the operator.
	text string
	// dynamic marks words whose value depends on an expansion ($VAR,
	// ${...}, $(...), `...`): the tokenizer cannot know what they become.
	dynamic bool
	// quoted marks words in which any part was quoted or escaped.
	quoted bool
}

// lexer splits one command line into tokens and collects the bodies of
// command substitutions it meets.
type lexer struct {
	s    string
	i    int
	toks []token
	// subs are the bodies of $(...), `...`, <(...) and >(...), to be
	// classified as command lines of their own.
	subs []string
	// pendingHeredocs are here-document delimiters whose bodies start at
	// the next newline.
	pendingHeredocs []heredoc
}

type heredoc struct {
	delim     string
	stripTabs bool
	quoted    bool
}

func isOpChar(c byte) bool {
	switch c {
	case '|', '&', ';', '<', '>', '(', ')', '\n':
		return true
	}
	return false
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// lex tokenizes s. It fails only on unbalanced quoting.
func lex(s string) (*lexer, error) {
	l := &lexer{s: s}
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case isBlank(c):
			l.i++
		case c == '\\' && l.i+1 < len(l.s) && l.s[l.i+1] == '\n':
			l.i += 2 // line continuation
		case c == '#':
			for l.i < len(l.s) && l.s[l.i] != '\n' {
				l.i++
			}
		case c == '\n':
			l.i++
			l.toks = append(l.toks, token{kind: tokOp, text: "\n"})
			if len(l.pendingHeredocs) > 0 {
				if err := l.readHeredocBodies(); err != nil {
					return nil, err
				}
			}
		case (c == '<' || c == '>') && l.i+1 < len(l.s) && l.s[l.i+1] == '(':
			// Process substitution <(...) / >(...).
			end, err := findClose(l.s, l.i+2)
			if err != nil {
				return nil, err
			}
			l.subs = append(l.subs, l.s[l.i+2:end])
			l.i = end + 1
			l.toks = append(l.toks, token{kind: tokWord, text: "/dev/fd/63", dynamic: true})
		case isOpChar(c):
			if err := l.readOp(""); err != nil {
				return nil, err
			}
		default:
			if err := l.readWord(); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// readOp reads an operator or redirection starting at l.i; fd is a digit
// prefix already consumed ("2" in 2>).
func (l *lexer) readOp(fd string) error {
	rest := l.s[l.i:]
	for _, op := range [...]string{"&>>", "<<<", "<<-", "&&", "||", ";;", "|&", ">>", "<<", "&>", ">&", "<&", ">|", "<>"} {
		if strings.HasPrefix(rest, op) {
			l.i += len(op)
			return l.emitOp(fd + op)
		}
	}
	l.i++
	return l.emitOp(fd + rest[:1])
}

func (l *lexer) emitOp(op string) error {
	o := strings.TrimLeft(op, "0123456789")
	switch o {
	case "|", "||", "&", "&&", ";", ";;", "(", ")", "|&":
		l.toks = append(l.toks, token{kind: tokOp, text: op})
		return nil
	}
	l.toks = append(l.toks, token{kind: tokRedir, text: op})
	if o == "<<" || o == "<<-" {
		// The delimiter word follows; read it now to register the body.
		for l.i < len(l.s) && isBlank(l.s[l.i]) {
			l.i++
		}
		if l.i >= len(l.s) || isOpChar(l.s[l.i]) {
			return nil
		}
		if err := l.readWord(); err != nil {
			return err
		}
		d := l.toks[len(l.toks)-1]
		l.pendingHeredocs = append(l.pendingHeredocs, heredoc{delim: d.text, stripTabs: o == "<<-", quoted: d.quoted})
	}
	return nil
}

// readHeredocBodies consumes the bodies of pending here-documents, which
// start right after a newline. Unquoted bodies undergo expansion, so their
// substitutions are collected.
func (l *lexer) readHeredocBodies() error {
	for _, h := range l.pendingHeredocs {
		var body strings.Builder
		found := false
		for l.i < len(l.s) {
			end := strings.IndexByte(l.s[l.i:], '\n')
			var line string
			if end < 0 {
				line = l.s[l.i:]
				l.i = len(l.s)
			} else {
				line = l.s[l.i : l.i+end]
				l.i += end + 1
			}
			cmp := line
			if h.stripTabs {
				cmp = strings.TrimLeft(cmp, "\t")
			}
			if cmp == h.delim {
				found = true
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		_ = found // sh reads an unterminated body to the end of input
		if !h.quoted {
			if _, err := l.scanExpansions(body.String()); err != nil {
				return err
			}
		}
	}
	l.pendingHeredocs = l.pendingHeredocs[:0]
	return nil
}

// scanExpansions collects the substitutions in text that undergoes
// expansion but not word splitting (here-document bodies, ${...}
// contents). It reports whether any expansion was present.
func (l *lexer) scanExpansions(text string) (bool, error) {
	dyn := false
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case '`':
			end, err := findBacktick(text, i+1)
			if err != nil {
				return dyn, err
			}
			l.subs = append(l.subs, unescapeBacktick(text[i+1:end]))
			i = end
			dyn = true
		case '$':
			n, err := l.readDollar(text, i)
			if err != nil {
				return dyn, err
			}
			if n > 0 {
				dyn = true
				i += n - 1
			}
		}
	}
	return dyn, nil
}

// readDollar handles an expansion starting at s[i] == '$'. It returns the
// number of bytes consumed (0 when the '$' is literal) and records any
// command substitution body.
func (l *lexer) readDollar(s string, i int) (int, error) {
	if i+1 >= len(s) {
		return 0, nil
	}
	switch c := s[i+1]; {
	case c == '(':
		if i+2 < len(s) && s[i+2] == '(' {
			// Arithmetic $(( ... )): not a command, but may nest some.
			end, err := findClose(s, i+3)
			if err == nil && end+1 < len(s) && s[end+1] == ')' {
				if _, err := l.scanExpansions(s[i+3 : end]); err != nil {
					return 0, err
				}
				return end + 2 - i, nil
			}
			// Otherwise it is $( (subshell) ): a command substitution.
		}
		end, err := findClose(s, i+2)
		if err != nil {
			return 0, err
		}
		l.subs = append(l.subs, s[i+2:end])
		return end + 1 - i, nil
	case c == '{':
		depth := 0
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					if _, err := l.scanExpansions(s[i+2 : j]); err != nil {
						return 0, err
					}
					return j + 1 - i, nil
				}
			}
		}
		return 0, errUnbalanced
	case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		j := i + 1
		for j < len(s) && (s[j] == '_' || 'a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		return j - i, nil
	case '0' <= c && c <= '9' || strings.IndexByte("@*#?$!-", c) >= 0:
		return 2, nil
	}
	return 0, nil
}

// readWord reads one word starting at l.i, resolving quotes and escapes.
func (l *lexer) readWord() error {
	var b strings.Builder
	tok := token{kind: tokWord}
	start := l.i
	for l.i < len(l.s) {
		c := l.s[l.i]
		if isBlank(c) {
			break
		}
		if isOpChar(c) {
			// An all-digit word directly before < or > is an fd number.
			if (c == '<' || c == '>') && l.i > start && !tok.quoted && isDigits(l.s[start:l.i]) {
				fd := l.s[start:l.i]
				return l.readOp(fd)
			}
			break
		}
		switch c {
		case '\\':
			tok.quoted = true
			if l.i+1 < len(l.s) {
				if l.s[l.i+1] != '\n' {
					b.WriteByte(l.s[l.i+1])
				}
				l.i += 2
			} else {
				b.WriteByte('\\') // a trailing backslash stays literal
				l.i++
			}
		case '\'':
			tok.quoted = true
			end := strings.IndexByte(l.s[l.i+1:], '\'')
			if end < 0 {
				return errUnbalanced
			}
			b.WriteString(l.s[l.i+1 : l.i+1+end])
			l.i += end + 2
		case '"':
			tok.quoted = true
			if err := l.readDouble(&b, &tok); err != nil {
				return err
			}
		case '`':
			if err := l.copyBacktick(&b, &tok); err != nil {
				return err
			}
		case '$':
			if l.i+1 < len(l.s) && l.s[l.i+1] == '\'' {
				// ANSI-C quoting $'...': backslash escapes a quote.
				tok.quoted = true
				j := l.i + 2
				for ; j < len(l.s) && l.s[j] != '\''; j++ {
					if l.s[j] == '\\' {
						j++
					}
				}
				if j >= len(l.s) {
					return errUnbalanced
				}
				b.WriteString(l.s[l.i+2 : j])
				l.i = j + 1
				continue
			}
			if err := l.copyDollar(&b, &tok); err != nil {
				return err
			}
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	tok.text = b.String()
	l.toks = append(l.toks, tok)
	return nil
}

// copyBacktick copies the `...` substitution starting at l.s[l.i] into b as
// written, records its command for classification and marks tok dynamic.
func (l *lexer) copyBacktick(b *strings.Builder, tok *token) error {
	end, err := findBacktick(l.s, l.i+1)
	if err != nil {
		return err
	}
	l.subs = append(l.subs, unescapeBacktick(l.s[l.i+1:end]))
	tok.dynamic = true
	b.WriteString(l.s[l.i : end+1])
	l.i = end + 1
	return nil
}

// copyDollar copies the expansion starting at l.s[l.i] == '$' into b as
// written and marks tok dynamic; a '$' that starts no expansion is a
// literal dollar sign.
func (l *lexer) copyDollar(b *strings.Builder, tok *token) error {
	n, err := l.readDollar(l.s, l.i)
	if err != nil {
		return err
	}
	if n == 0 {
		b.WriteByte('$')
		l.i++
		return nil
	}
	tok.dynamic = true
	b.WriteString(l.s[l.i : l.i+n])
	l.i += n
	return nil
}

// readDouble reads a double-quoted string starting at l.s[l.i] == '"'.
func (l *lexer) readDouble(b *strings.Builder, tok *token) error {
	l.i++
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch c {
		case '"':
			l.i++
			return nil
		case '\\':
			if l.i+1 < len(l.s) && strings.IndexByte("$`\"\\\n", l.s[l.i+1]) >= 0 {
				if l.s[l.i+1] != '\n' {
					b.WriteByte(l.s[l.i+1])
				}
				l.i += 2
				continue
			}
			b.WriteByte('\\')
			l.i++
		case '`':
			if err := l.copyBacktick(b, tok); err != nil {
				return err
			}
		case '$':
			if err := l.copyDollar(b, tok); err != nil {
				return err
			}
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	return errUnbalanced
}

// findClose returns the index of the ')' closing a group whose body starts
// at s[i], skipping quoted text and nested groups.
func findClose(s string, i int) (int, error) {
	depth := 1
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return 0, errUnbalanced
			}
			i += end + 1
		case '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return 0, errUnbalanced
			}
			i = j
		case '`':
			end, err := findBacktick(s, i+1)
			if err != nil {
				return 0, err
			}
			i = end
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, errUnbalanced
}

// findBacktick returns the index of the unescaped '`' ending a backtick
// substitution whose body starts at s[i].
func findBacktick(s string, i int) (int, error) {
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '`':
			return i, nil
		}
	}
	return 0, errUnbalanced
}

// unescapeBacktick removes the backslashes that protect $, ` and \ inside
// an old-style substitution.
func unescapeBacktick(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\\", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
