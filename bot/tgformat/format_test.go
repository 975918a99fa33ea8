package tgformat

import (
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
)

// checkChunks asserts what Telegram needs of every chunk: HTML it accepts,
// within the limit in both renderings, and a plain fallback that shows the
// same text as the HTML.
func checkChunks(t *testing.T, in string, chunks []Chunk, limit int) {
	t.Helper()
	if limit <= 0 {
		limit = MaxMessageLen
	}
	for i, c := range chunks {
		shown, err := bottest.ParseHTML(c.HTML)
		if err != nil {
			t.Fatalf("chunk %d %q of %q: %v", i, c.HTML, in, err)
		}
		if shown != c.Plain {
			t.Fatalf("chunk %d of %q: HTML shows %q, plain fallback %q", i, in, shown, c.Plain)
		}
		if TextLen(c.HTML) > limit || TextLen(c.Plain) > limit {
			t.Fatalf("chunk %d is %d/%d units, limit %d", i, TextLen(c.HTML), TextLen(c.Plain), limit)
		}
		if strings.TrimSpace(c.Plain) == "" {
			t.Fatalf("chunk %d of %q is empty", i, in)
		}
	}
}

func TestCheckerRejectsWhatTelegramRejects(t *testing.T) {
	for _, bad := range []string{
		"a < b", "a > b", "a & b", "&nbsp;", "<x>y</x>", "<b>open", "<b>x</i>", "</b>",
		"<pre><b>x</b></pre>", "<code><i>x</i></code>", "<b><code>x</code></b>",
		"<blockquote><blockquote>x</blockquote></blockquote>", `<a href="https://x"><a href="https://y">z</a></a>`,
		`<a href="javascript:alert(1)">x</a>`, `<a href="https://x"><code>c</code></a>`, `<code class="language-go">x</code>`,
		`<span>x</span>`,
	} {
		if _, err := bottest.ParseHTML(bad); err == nil {
			t.Errorf("checker accepted %q", bad)
		}
	}
	for in, want := range map[string]string{
		"&lt;&gt;&amp;&quot;&#38;&#x26;":                                     "<>&\"&&",
		`<b>b <i>bi</i></b> <a href="https://x.dev/a_(b)?q=1&amp;r=2">l</a>`: "b bi l",
		`<pre><code class="language-go">x := 1</code></pre>`:                 "x := 1",
		`<blockquote expandable>q <code>c</code></blockquote>`:               "q c",
	} {
		if got, err := bottest.ParseHTML(in); err != nil || got != want {
			t.Errorf("ParseHTML(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestEscapeHTML(t *testing.T) {
	if got := EscapeHTML(`<a href="x">&</a>` + "\x00\xff"); got != "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;\uFFFD" {
		t.Errorf("EscapeHTML = %q", got)
	}
}

// The defects of issue 17 (points 1–3) and the Markdown models write.
func TestAnswerRendersMarkdownModelsWrite(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // HTML of each chunk
	}{
		{"plain", "Hello, world.", []string{"Hello, world."}},
		{"bold in heading (point 1)", "### **2. Configure**", []string{"<b>2. Configure</b>"}},
		{"code in bold (point 1)", "**`odek run`** now", []string{"<b>odek run</b> now"}},
		{"code in heading (point 1)", "## Use `odek run`", []string{"<b>Use odek run</b>"}},
		{"table (point 1)", "| Name | Size |\n|---|--:|\n| a.go | 12 |\n| main.go | 3 |",
			[]string{"<pre>Name    | Size\n--------+-----\na.go    | 12\nmain.go | 3</pre>"}},
		{"blockquote (point 1)", "> quoted *text*\n> more", []string{"<blockquote>quoted <i>text</i>\nmore</blockquote>"}},
		{"link with parentheses (point 2)", "See [Go](https://en.wikipedia.org/wiki/Go_(programming_language)) now.",
			[]string{`See <a href="https://en.wikipedia.org/wiki/Go_(programming_language)">Go</a> now.`}},
		{"link with escapes", `[a\]b](https://x.dev/\(y\))`, []string{`<a href="https://x.dev/(y)">a]b</a>`}},
		{"nested fences (point 3)", "````markdown\n```sh\necho hi\n```\n````\n\nAfter *all*.",
			[]string{"<pre><code class=\"language-markdown\">```sh\necho hi\n```</code></pre>\n\nAfter <i>all</i>."}},
		{"nested emphasis", "***both*** and **bold *italic* bold**", []string{"<i><b>both</b></i> and <b>bold <i>italic</i> bold</b>"}},
		{"strike and code", "~~old~~ `a<b>`", []string{"<s>old</s> <code>a&lt;b&gt;</code>"}},
		{"lists", "- one\n- two\n  - deep\n\n1. first\n2. second", []string{"• one\n• two\n  • deep\n\n1. first\n2. second"}},
		{"task list", "- [x] done\n- [ ] todo", []string{"• ☑ done\n• ☐ todo"}},
		{"html is text", "<b>raw</b> & co", []string{"&lt;b&gt;raw&lt;/b&gt; &amp; co"}},
		{"unbalanced markers literal", "2*3 = 6 and a_b and `x", []string{"2*3 = 6 and a_b and `x"}},
		{"code block", "Run:\n\n```sh\necho `hi` \\ there\n```\n\nok.", []string{"Run:\n\n<pre><code class=\"language-sh\">echo `hi` \\ there</code></pre>\n\nok."}},
		{"unclosed fence runs to end", "```\nx := 1", []string{"<pre>x := 1</pre>"}},
		{"bad lang dropped", "```a<b\nx\n```", []string{"<pre>x</pre>"}},
		{"non-web link shown as text", "[x](javascript:alert(1))", []string{"x (javascript:alert(1))"}},
		{"autolink", "see https://x.dev/a?b=1&c=2.", []string{`see <a href="https://x.dev/a?b=1&amp;c=2">https://x.dev/a?b=1&amp;c=2</a>.`}},
		{"code in blockquote is not pre", "> ```\n> x\n> ```", []string{"<blockquote>x</blockquote>"}},
		{"empty", "", nil},
		{"empty code block dropped", "```\n\n```", nil},
		{"crlf", "a\r\n\r\nb", []string{"a\n\nb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Answer(tt.in, 0)
			checkChunks(t, tt.in, chunks, 0)
			var got []string
			for _, c := range chunks {
				got = append(got, c.HTML)
			}
			if strings.Join(got, "\x1f") != strings.Join(tt.want, "\x1f") {
				t.Errorf("Answer(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// sixThousand is a 6,000-character answer: prose paragraphs around a code
// block of 3,000 characters.
func sixThousand() string {
	var b strings.Builder
	for b.Len() < 2000 {
		b.WriteString("Paragraph with reserved chars (1+1=2) <tag> & co. ")
		if b.Len()%400 < 50 {
			b.WriteString("\n\n")
		}
	}
	b.WriteString("\n\n```go\n")
	for b.Len() < 5200 {
		b.WriteString("fmt.Println(`line`, \"x\\y\") // <comment> & more\n")
	}
	b.WriteString("```\n\n")
	for b.Len() < 6000 {
		b.WriteString("Tail text. ")
	}
	return b.String()
}

func TestAnswerSplits6000CharsWithCodeBlock(t *testing.T) {
	in := sixThousand()
	chunks := Answer(in, MaxMessageLen)
	if len(chunks) < 2 {
		t.Fatalf("got %d chunks, want ≥ 2", len(chunks))
	}
	checkChunks(t, in, chunks, 0)
	var code strings.Builder
	for _, c := range chunks {
		if strings.Count(c.HTML, "<pre>") != strings.Count(c.HTML, "</pre>") {
			t.Errorf("a chunk leaves a pre block open: %q", c.HTML)
		}
		if i := strings.Index(c.Plain, "fmt.Println"); i >= 0 {
			code.WriteString(c.Plain[i:])
		}
	}
	if n := strings.Count(code.String(), "fmt.Println"); n != strings.Count(in, "fmt.Println") {
		t.Errorf("code lines: %d sent, %d in the answer", n, strings.Count(in, "fmt.Println"))
	}
}

func TestAnswerHugeBlocksAndLongWords(t *testing.T) {
	in := "```\n" + strings.Repeat("<&", 5000) + "\n```\n\n" + strings.Repeat("é.", 5000) + "\n\n" + strings.Repeat("😀", 3000) +
		"\n\n> " + strings.Repeat("quote **b** ", 600)
	chunks := Answer(in, 0)
	checkChunks(t, in, chunks, 0)
	var all strings.Builder
	for _, c := range chunks {
		all.WriteString(c.Plain)
	}
	for _, want := range []string{strings.Repeat("<&", 2000), strings.Repeat("😀", 1000), strings.Repeat("é.", 1000)} {
		if !strings.Contains(strings.ReplaceAll(all.String(), "\n", ""), want) {
			t.Errorf("text lost: no %q…", want[:8])
		}
	}
}

func TestTextLenCountsUTF16(t *testing.T) {
	for in, want := range map[string]int{"": 0, "abc": 3, "é": 1, "😀": 2, "a😀b": 4} {
		if got := TextLen(in); got != want {
			t.Errorf("TextLen(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestArtifactLineAndFooter(t *testing.T) {
	h, plain := ArtifactLine(Artifact{ID: "j1.1", Name: "report<1>.pdf", MediaType: "application/pdf", Bytes: 12600,
		SHA256: strings.Repeat("ab", 32), Summary: "CI\nresults *bold*"})
	wantPlain := `📎 j1.1 · report<1>.pdf · application/pdf · 12.3 KiB · sha256 abababababab · "CI results *bold*"`
	if plain != wantPlain {
		t.Errorf("plain = %q\nwant    %q", plain, wantPlain)
	}
	if shown, err := bottest.ParseHTML(h); err != nil || shown != plain {
		t.Errorf("html %q: %v (shows %q)", h, err, shown)
	}
	if _, p := ArtifactLine(Artifact{ID: "x"}); p != "📎 x · application/octet-stream · 0 B" {
		t.Errorf("minimal line = %q", p)
	}
	tests := []struct {
		in, out int64
		usd     float64
		d       time.Duration
		want    string
	}{
		{1000, 234, 0.0123, 4200 * time.Millisecond, "1,234 tokens · $0.0123 · 4.2 s"},
		{0, 0, 0, 0, "0 tokens · 0.0 s"},
		{999999, 1, 0, 125 * time.Second, "1,000,000 tokens · 2 min 5 s"},
	}
	for _, tt := range tests {
		if got := Footer(tt.in, tt.out, tt.usd, tt.d); got != tt.want {
			t.Errorf("Footer = %q, want %q", got, tt.want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// Point 4: the answer, the artifact lines and the footer are one message;
// a notice (stopped, failed) carries the footer inline.
func TestFormatReplyIsOneMessage(t *testing.T) {
	r := Reply{Answer: "Done.", Artifacts: []Artifact{{ID: "a.1", MediaType: "text/plain", Bytes: 10}}, Footer: "12 tokens · 0.1 s"}
	chunks := FormatReply(r, 0)
	if len(chunks) != 1 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	if want := "Done.\n\n📎 a.1 · text/plain · 10 B\n<i>12 tokens · 0.1 s</i>"; chunks[0].HTML != want {
		t.Errorf("got  %q\nwant %q", chunks[0].HTML, want)
	}
	checkChunks(t, "", chunks, 0)
	failed := FormatReply(Reply{Head: "❌ The job failed: boom.", Footer: "0 tokens · 0.0 s"}, 0)
	if len(failed) != 1 || failed[0].Plain != "❌ The job failed: boom.\n\n0 tokens · 0.0 s" {
		t.Errorf("failure notice: %+v", failed)
	}
	stopped := FormatReply(Reply{Head: "⏹ Stopped.", Answer: "partial *work*", Footer: "5 tokens · 1.0 s"}, 0)
	if len(stopped) != 1 || stopped[0].HTML != "⏹ Stopped.\n\npartial <i>work</i>\n\n<i>5 tokens · 1.0 s</i>" {
		t.Errorf("stop notice: %+v", stopped)
	}
	// Metadata that does not fit moves to a chunk of its own.
	long := FormatReply(Reply{Answer: strings.Repeat("x", 4090), Footer: "1 tokens · 0.1 s"}, 0)
	if len(long) != 2 || !strings.HasPrefix(long[1].Plain, "1 tokens") {
		t.Errorf("footer placement: %d chunks, last %q", len(long), long[len(long)-1].Plain)
	}
	if only := FormatReply(Reply{Footer: "f"}, 0); len(only) != 1 || only[0].Plain != "f" {
		t.Errorf("footer only: %+v", only)
	}
}

// FuzzAnswer: for any model output, every chunk is HTML Telegram accepts,
// shows the same text as its plain fallback, and fits the limit.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		"", "plain", "**b** *i* `c` ~~s~~ [l](https://e.x/(y))", "# h\n- a\n* b", "### **2. x** `y`",
		"```go\nfunc() {}\n```", "```\nunclosed", "_*[]()~`>#+-=|{}.!\\", "*a**b*", "`a``b`", "<b>&amp;</b>",
		"| a | b |\n|---|---|\n| `1` | [x](https://y) |", "> q\n> > nested\n> ```\n> code\n> ```",
		"````md\n```sh\nx\n```\n````", "a\x00b\xff", "😀 " + strings.Repeat("x", 300), "[a](http://x y)", "``x``y`",
		"- [x] t\n  1. n\n     > q", "![img](https://x/y.png)", "<https://a.b>", "x@y.z", "&copy; &#0; &#x110000;",
		"***a*** **_b_** __c__", "[**b** `c`](https://x)", "1) a\n2) b", "***\n---",
	} {
		f.Add(s, uint16(0))
		f.Add(s, uint16(64))
	}
	f.Fuzz(func(t *testing.T, s string, lim uint16) {
		limit := int(lim)
		if limit != 0 && limit < 64 {
			limit = 64
		}
		checkChunks(t, s, Answer(s, limit), limit)
	})
}

// FuzzArtifactLine: values from a worker cannot break the line or the
// HTML around it.
func FuzzArtifactLine(f *testing.F) {
	f.Add("id", "name", "text/plain", "summary\nnext", "ab")
	f.Add("*_", "`<b>", "]&", "\u2028x\r", strings.Repeat("f", 64))
	f.Fuzz(func(t *testing.T, id, name, media, summary, sha string) {
		h, plain := ArtifactLine(Artifact{ID: id, Name: name, MediaType: media, Summary: summary, SHA256: sha, Bytes: 1})
		if strings.ContainsAny(plain, "\n\r\u2028\u2029") || strings.ContainsAny(h, "\n\r") {
			t.Fatalf("line break in %q", plain)
		}
		if shown, err := bottest.ParseHTML(h); err != nil || shown != plain {
			t.Fatalf("%q: %v", h, err)
		}
	})
}
