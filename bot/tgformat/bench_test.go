package tgformat

import (
	"bytes"
	"strings"
	"testing"
)

// modelAnswer is a 16 k-character answer of the shape models write:
// headings with emphasis, lists, a table, code blocks and links.
func modelAnswer() string {
	var b strings.Builder
	for b.Len() < 16000 {
		b.WriteString("### **Step 2. Configure** `odek run`\n\nSet the *endpoint* and see [Go](https://en.wikipedia.org/wiki/Go_(programming_language)).\n\n")
		b.WriteString("- first item with `code`\n- second **bold** item\n  - nested\n\n| Name | Size |\n|---|---|\n| a.go | 12 |\n\n")
		b.WriteString("```go\nfunc main() { fmt.Println(\"<hi>\") }\n```\n\n> a quoted note\n\n")
	}
	return b.String()
}

// BenchmarkAnswer renders a 16 k answer to Telegram chunks.
func BenchmarkAnswer(b *testing.B) {
	in := modelAnswer()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Answer(in, 0)
	}
}

// BenchmarkGoldmarkHTML is the peer: goldmark's own HTML renderer on the
// same answer (parse and render, no splitting).
func BenchmarkGoldmarkHTML(b *testing.B) {
	in := []byte(modelAnswer())
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if err := md.Convert(in, &out); err != nil {
			b.Fatal(err)
		}
	}
}
