package mcpauth

import (
	"html"
	"testing"
)

// escapeHTML replaces html.EscapeString on the callback page: the same
// output for the characters that matter and for text around them.
func TestEscapeHTMLMatchesTheHTMLPackage(t *testing.T) {
	for _, s := range []string{
		"", "plain", `<script>alert("x")</script>`, "a & b", "it's", `"quoted"`,
		"access_denied: <b>no</b> & 'never'", "ünïcode <ü>", "&amp;",
	} {
		if got, want := escapeHTML(s), html.EscapeString(s); got != want {
			t.Errorf("escapeHTML(%q) = %q, want %q", s, got, want)
		}
	}
}
