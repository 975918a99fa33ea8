package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// fuzzSeeds are texts that exercise every detector, its edges and its
// interplay with registered values.
var fuzzSeeds = []string{
	"",
	"plain text with nothing secret in it: a=b, c: d",
	"key sk-proj-AbCdEf1234567890abcdefGHIJ done",
	"sk-ant-api03-AbCdEf1234567890abcdefGHIJKLmnop",
	"export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 x",
	"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
	"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	"AKIAIOSFODNN7EXAMPLE aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"AIzaSyA-1234567890abcdefghijklmnopqrstu",
	"bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 ok",
	`{"api_key": "abc def", "max_tokens": 100, "password":"x\"y", "tokens": ["a"]}`,
	"Authorization: Bearer abc.def-123\nCookie: a=1; b=2\r\nnext",
	"curl -H 'Authorization: Bearer eyJhbGciOi1234' https://u:p4ss@host/x",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEabc+/=\nxyz\n-----END RSA PRIVATE KEY-----\nafter",
	"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXk\\n-----END OPENSSH PRIVATE KEY-----\"",
	"-----BEGIN PRIVATE KEY-----\nunterminated",
	"token := os.Getenv(\"X\") if token == \"\" { password=[abc secret: [REDACTED]x",
	"[REDACTED]sk-AbCdEf1234567890abcdefGHIJ D]hunter2hunter2[RED",
	"postgres://admin:s3cr3t@db:5432/app and http://[::1]:80/",
	"'password' => 'x', PASSWORD   =   spaced  , passwd:\tv\n",
	"12345678901234567890123:abcdefghijklmnopqrstuvwxyz0123456789",
}

func FuzzString(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, []string{"hunter2hunter2", "D]hunter2hunter2[RED", "        ", "s3cr3t-v@lue"}[i%4])
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		r := New()
		r.AddValue(value)
		out := r.String(text)
		if again := r.String(out); again != out {
			t.Fatalf("not idempotent:\n in    %q\n out   %q\n again %q", text, out, again)
		}
		if got := string(r.Bytes([]byte(text))); got != out {
			t.Fatalf("Bytes %q != String %q", got, out)
		}
		var nilR *Redactor
		if p := nilR.String(text); nilR.String(p) != p {
			t.Fatalf("nil Redactor not idempotent on %q", text)
		}
		for _, n := range needlesFor(value) {
			if strings.Contains(out, n) {
				t.Fatalf("registered value %q survives as %q in %q", value, n, out)
			}
		}
		if len(needlesFor(value)) > 0 && strings.Contains(out, value) {
			t.Fatalf("registered value %q survives in %q", value, out)
		}
	})
}

func FuzzStream(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, "hunter2hunter2", []byte{byte(i), 1, 7, 3, 250, 2})
	}
	f.Fuzz(func(t *testing.T, text, value string, cuts []byte) {
		r := New()
		r.AddValue(value)
		want := r.String(text)
		if got := streamed(r, text, cuts); got != want {
			t.Fatalf("stream differs from String:\n text   %q\n cuts   %v\n stream %q\n string %q", text, cuts, got, want)
		}
	})
}

// streamed writes text to a Stream in chunks whose sizes come from cuts
// (cycled; 0 means 1) and returns everything emitted.
func streamed(r *Redactor, text string, cuts []byte) string {
	var out strings.Builder
	s := r.NewStream(func(p string) {
		if p == "" {
			panic("emit called with an empty string")
		}
		out.WriteString(p)
	})
	for i := 0; len(text) > 0; i++ {
		n := 1
		if len(cuts) > 0 {
			n = max(1, int(cuts[i%len(cuts)]))
		}
		n = min(n, len(text))
		s.Write(text[:n])
		text = text[n:]
	}
	s.Flush()
	return out.String()
}

// fragments are the pieces TestRandomTexts builds texts from: parts of
// every pattern, separators, quotes, markers and registered values, so
// that random concatenations hit the detectors' edges and interplay far
// more often than byte-level fuzzing does.
var fragments = []string{
	"sk-", "sk-proj-", "ghp_", "github_pat_", "xoxb-", "AKIA", "AIza", "Ab", "cd", "12", "3456789",
	"ABCDEFGHIJKLMNOP", "abcdefghijklmnopqrstuvwxyz0123456789", "_", "-", ".", "/",
	"password", "api_key", "TOKEN", "max_tokens", "Authorization", "Cookie", "secret",
	"=", ":", ":=", "=>", "==", "://", "@", " ", "  ", "\t", "\n", "\r\n", `"`, "'", `\`, ",", ";", "&",
	"(", ")", "{", "}", "[", "]", "Bearer ", "bearer", "https://", "u:", "p@ss",
	"-----BEGIN ", "RSA ", "PRIVATE KEY", "-----", "-----END ", "MIIE+/=",
	Marker, "[RED", "ACTED]", "D]", "hunter2hunter2", "hunter2", "os.Getenv", "x.y",
	`"API Key"`, "'token'", "1234567890:", "123456", `["`, "\\n", "q\"uote-v4lue'", "Set-Cookie",
	"AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "aGVsbG8", "%40", "$",
}

func TestRandomTexts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := New()
	r.AddValue("hunter2hunter2")
	r.AddValue("D]p@ss-word-1[RE")
	r.AddValue("q\"uote-v4lue'")
	for i := range 3000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
		text := b.String()
		out := r.String(text)
		if again := r.String(out); again != out {
			t.Fatalf("#%d not idempotent:\n in    %q\n out   %q\n again %q", i, text, out, again)
		}
		if strings.Contains(out, "hunter2hunter2") || strings.Contains(out, "p@ss-word-1") || strings.Contains(out, "uote-v4lue") {
			t.Fatalf("#%d registered value survives: %q → %q", i, text, out)
		}
		cuts := []byte{byte(1 + rng.IntN(9)), byte(1 + rng.IntN(30)), 1}
		if got := streamed(r, text, cuts); got != out {
			t.Fatalf("#%d stream differs from String:\n text   %q\n cuts   %v\n stream %q\n string %q", i, text, cuts, got, out)
		}
	}
}
