package bot

import (
	"strings"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
)

// FuzzFormatAnswer: for any answer text, every chunk is valid MarkdownV2,
// within the limit in both renderings, no code block is left open, and the
// plain chunks keep all the text.
func FuzzFormatAnswer(f *testing.F) {
	for _, s := range []string{
		"", "plain", "**b** *i* `c` ~~s~~ [l](https://e.x/(y))", "# h\n- a\n* b",
		"```go\nfunc() {}\n```", "```\nunclosed", "_*[]()~`>#+-=|{}.!\\", "*a**b*", "`a``b`",
		"**a****b**", "a\x00b\xff", "😀 " + strings.Repeat("x", 300), "[a](http://x y)", "``x``y`",
	} {
		f.Add(s, uint16(0))
		f.Add(s, uint16(64))
	}
	f.Fuzz(func(t *testing.T, s string, lim uint16) {
		limit := int(lim)
		if limit != 0 && limit < 64 {
			limit = 64
		}
		want := limit
		if want == 0 {
			want = MaxMessageLen
		}
		chunks := FormatAnswer(s, limit)
		for i, c := range chunks {
			if err := bottest.CheckMarkdownV2(c.Markdown); err != nil {
				t.Fatalf("chunk %d %q of %q: %v", i, c.Markdown, s, err)
			}
			if TextLen(c.Markdown) > want || TextLen(c.Plain) > want {
				t.Fatalf("chunk %d is %d/%d units, limit %d", i, TextLen(c.Markdown), TextLen(c.Plain), want)
			}
		}
		assertSameText(t, s, chunks)
	})
}

// FuzzArtifactLine: values from a worker cannot break the line or the
// MarkdownV2 around it.
func FuzzArtifactLine(f *testing.F) {
	f.Add("id", "name", "text/plain", "summary\nnext", "ab")
	f.Add("*_", "`", "]", "\u2028x\r", strings.Repeat("f", 64))
	f.Fuzz(func(t *testing.T, id, name, media, summary, sha string) {
		md, plain := ArtifactLine(Artifact{ID: id, Name: name, MediaType: media, Summary: summary, SHA256: sha, Bytes: 1})
		if strings.ContainsAny(plain, "\n\r\u2028\u2029") || strings.ContainsAny(md, "\n\r") {
			t.Fatalf("line break in %q", plain)
		}
		if err := bottest.CheckMarkdownV2(md); err != nil {
			t.Fatalf("%q: %v", md, err)
		}
	})
}
