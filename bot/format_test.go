package bot

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/odekrun/odek/bot/bottest"
)

func TestEscapeMarkdownV2EveryReservedCharacter(t *testing.T) {
	// Every character the Bot API documents as reserved, plus the backslash.
	const reserved = "_*[]()~`>#+-=|{}.!\\"
	got := EscapeMarkdownV2(reserved)
	var want strings.Builder
	for _, c := range reserved {
		want.WriteString("\\" + string(c))
	}
	if got != want.String() {
		t.Fatalf("EscapeMarkdownV2(%q) = %q, want %q", reserved, got, want.String())
	}
	if err := bottest.CheckMarkdownV2(got); err != nil {
		t.Fatalf("escaped text rejected: %v", err)
	}
	// Each reserved character unescaped is rejected by the checker, which
	// shows the checker (and so every test using it) can fail.
	for _, c := range strings.TrimSuffix(reserved, "\\") {
		if err := bottest.CheckMarkdownV2("a" + string(c) + "b"); err == nil {
			t.Errorf("checker accepted unescaped %q", c)
		}
	}
	if got := EscapeMarkdownV2("a\x00b\xffc"); got != "ab\uFFFDc" {
		t.Errorf("NUL and invalid UTF-8: got %q", got)
	}
}

func TestFormatAnswerTable(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // Markdown of each chunk
	}{
		{"plain", "Hello, world.", []string{`Hello, world\.`}},
		{"bold italic code", "**Done**: *see* `a_b.go` now", []string{"*Done*: _see_ `a_b.go` now"}},
		{"strike and link", "~~old~~ [docs](https://x.dev/a_(b))", []string{`~old~ [docs](https://x.dev/a_(b)\)`}},
		{"heading and bullets", "# Result\n- one\n* two", []string{"*Result*\n• one\n• two"}},
		{"unbalanced markers literal", "2*3 = 6 and a_b and `x", []string{`2\*3 \= 6 and a\_b and \` + "`x"}},
		{"code block", "Run:\n\n```sh\necho `hi` \\ there\n```\n\nok.", []string{"Run:\n\n```sh\necho \\`hi\\` \\\\ there\n```\n\nok\\."}},
		{"unclosed fence runs to end", "```\nx := 1", []string{"```\nx := 1\n```"}},
		{"adjacent italics stay valid", "*a**b*", []string{`\*a\*_b_`}},
		{"adjacent bold", "**a****b**", []string{`*a*\*\*b\*\*`}},
		{"bad lang dropped", "```a b\nx\n```", []string{"```\nx\n```"}},
		{"empty", "", nil},
		{"empty code block dropped", "```\n\n```", nil},
		{"crlf", "a\r\n\r\nb", []string{"a\n\nb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := FormatAnswer(tt.in, 0)
			var got []string
			for _, c := range chunks {
				got = append(got, c.Markdown)
				if err := bottest.CheckMarkdownV2(c.Markdown); err != nil {
					t.Errorf("chunk %q: %v", c.Markdown, err)
				}
			}
			if strings.Join(got, "\x1f") != strings.Join(tt.want, "\x1f") {
				t.Errorf("FormatAnswer(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// sixThousand is a 6,000-character answer: prose paragraphs around a code
// block of 3,000 characters.
func sixThousand() string {
	var b strings.Builder
	for b.Len() < 2000 {
		b.WriteString("Paragraph with reserved chars (1+1=2). ")
		if b.Len()%400 < 40 {
			b.WriteString("\n\n")
		}
	}
	b.WriteString("\n\n```go\n")
	for i := 0; b.Len() < 5200; i++ {
		b.WriteString("fmt.Println(`line`, \"x\\y\") // comment\n")
	}
	b.WriteString("```\n\n")
	for b.Len() < 6000 {
		b.WriteString("Tail text. ")
	}
	return b.String()
}

func TestFormatAnswerSplits6000CharsWithCodeBlock(t *testing.T) {
	in := sixThousand()
	if n := len(in); n < 6000 {
		t.Fatalf("fixture is %d chars", n)
	}
	chunks := FormatAnswer(in, MaxMessageLen)
	if len(chunks) < 2 {
		t.Fatalf("got %d chunks, want ≥ 2", len(chunks))
	}
	for i, c := range chunks {
		if n := TextLen(c.Markdown); n > MaxMessageLen {
			t.Errorf("chunk %d is %d units", i, n)
		}
		if n := TextLen(c.Plain); n > MaxMessageLen {
			t.Errorf("plain chunk %d is %d units", i, n)
		}
		if err := bottest.CheckMarkdownV2(c.Markdown); err != nil {
			t.Errorf("chunk %d: %v", i, err)
		}
		if strings.Count(c.Markdown, "```")%2 != 0 {
			t.Errorf("chunk %d leaves a code block open", i)
		}
	}
	assertSameText(t, in, chunks)
}

func TestFormatAnswerHugeCodeBlockAndLongWord(t *testing.T) {
	in := "```\n" + strings.Repeat("`\\", 5000) + "\n```\n\n" + strings.Repeat("é.", 5000) + "\n\n" + strings.Repeat("😀", 3000)
	chunks := FormatAnswer(in, 0)
	for i, c := range chunks {
		if n := TextLen(c.Markdown); n > MaxMessageLen {
			t.Errorf("chunk %d is %d units", i, n)
		}
		if err := bottest.CheckMarkdownV2(c.Markdown); err != nil {
			t.Errorf("chunk %d: %v", i, err)
		}
	}
	assertSameText(t, in, chunks)
}

// assertSameText checks that the plain chunks carry every non-space,
// non-backtick character of in, in order.
func assertSameText(t *testing.T, in string, chunks []Chunk) {
	t.Helper()
	strip := func(s string) string {
		// Fence lines (and their info strings) are structure, not text.
		var kept []string
		for _, line := range strings.Split(s, "\n") {
			if !strings.HasPrefix(strings.TrimLeft(line, " \t"), "```") {
				kept = append(kept, line)
			}
		}
		s = strings.Join(kept, "\n")
		return strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) || r == '`' {
				return -1
			}
			return r
		}, s)
	}
	var all strings.Builder
	for _, c := range chunks {
		all.WriteString(c.Plain + "\n")
	}
	if got, want := strip(all.String()), strip(cleanText(in)); got != want {
		t.Errorf("plain chunks lost text: got %d chars, want %d", len(got), len(want))
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
	md, plain := ArtifactLine(Artifact{ID: "j1.1", Name: "report.pdf", MediaType: "application/pdf", Bytes: 12600,
		SHA256: strings.Repeat("ab", 32), Summary: "CI\nresults *bold*"})
	wantPlain := `📎 j1.1 · report.pdf · application/pdf · 12.3 KiB · sha256 abababababab · "CI results *bold*"`
	if plain != wantPlain {
		t.Errorf("plain = %q\nwant    %q", plain, wantPlain)
	}
	if err := bottest.CheckMarkdownV2(md); err != nil {
		t.Errorf("md %q: %v", md, err)
	}
	if _, p := ArtifactLine(Artifact{ID: "x"}); p != "📎 x · application/octet-stream · 0 B" {
		t.Errorf("minimal line = %q", p)
	}
	tests := []struct {
		in, out, cost int64
		usd           float64
		d             time.Duration
		want          string
	}{
		{1000, 234, 0, 0.0123, 4200 * time.Millisecond, "1,234 tokens · $0.0123 · 4.2 s"},
		{0, 0, 0, 0, 0, "0 tokens · 0.0 s"},
		{999999, 1, 0, 0, 125 * time.Second, "1,000,000 tokens · 2 min 5 s"},
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

func TestFormatReplyAppendsMetadataToLastChunk(t *testing.T) {
	r := Reply{Answer: "Done.", Artifacts: []Artifact{{ID: "a.1", MediaType: "text/plain", Bytes: 10}}, Footer: "12 tokens · 0.1 s"}
	chunks := FormatReply(r, 0)
	if len(chunks) != 1 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	want := "Done\\.\n\n📎 a\\.1 · text/plain · 10 B\n_12 tokens · 0\\.1 s_"
	if chunks[0].Markdown != want {
		t.Errorf("got  %q\nwant %q", chunks[0].Markdown, want)
	}
	if err := bottest.CheckMarkdownV2(chunks[0].Markdown); err != nil {
		t.Error(err)
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
