package worker

import "testing"

// The text format's escapes (help text: backslash and newline; label
// values: those and the double quote).
func TestExpositionEscapes(t *testing.T) {
	for _, c := range []struct{ in, help, label string }{
		{"plain text", "plain text", "plain text"},
		{"", "", ""},
		{`a\b`, `a\\b`, `a\\b`},
		{"two\nlines", `two\nlines`, `two\nlines`},
		{`say "hi"`, `say "hi"`, `say \"hi\"`},
		{"\\\n\"", `\\\n"`, `\\\n\"`},
		{"ünïcode\n", `ünïcode\n`, `ünïcode\n`},
	} {
		if got := escapeHelp(c.in); got != c.help {
			t.Errorf("escapeHelp(%q) = %q, want %q", c.in, got, c.help)
		}
		if got := escapeLabel(c.in); got != c.label {
			t.Errorf("escapeLabel(%q) = %q, want %q", c.in, got, c.label)
		}
	}
}
