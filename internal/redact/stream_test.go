package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStreamMatchesString(t *testing.T) {
	r := New()
	r.AddValue("hunter2hunter2")
	r.AddValue("s3cr3t-v@lue")
	texts := append([]string{secretText, ordinaryText,
		"pw hunter2hunter2 and s3cr3t-v@lue",
		strings.Repeat("x", 3*lookBehind) + "API_KEY=abc123 " + strings.Repeat("y", 3*lookBehind) + "hunter2hunter2",
	}, fuzzSeeds...)
	for _, text := range texts {
		want := r.String(text)
		for _, size := range []byte{1, 2, 3, 5, 7, 16, 64, 255} {
			if got := streamed(r, text, []byte{size}); got != want {
				t.Fatalf("chunks of %d: stream differs from String\n text   %q\n stream %q\n string %q", size, text, got, want)
			}
		}
	}
}

// recorder collects what a Stream emits.
type recorder struct{ parts []string }

func (rec *recorder) emit(s string) { rec.parts = append(rec.parts, s) }
func (rec *recorder) all() string   { return strings.Join(rec.parts, "") }

func TestStreamHoldsOnlyPossibleSecrets(t *testing.T) {
	r := New()
	r.AddValue("hunter2hunter2")
	tests := []struct {
		name    string
		write   string
		emitted string // what must be out before Flush
	}{
		{"plain text goes out at once", "hello world, all fine", "hello world, all fine"},
		{"prefix of a registered value", "pw is hunt", "pw is "},
		{"registered value complete", "pw is hunter2hunter2 ", "pw is [REDACTED] "},
		{"token run may still grow", "key sk-AbCdEf1234567890abcdefGHIJ", "key "},
		{"partial token prefix", "ask", "a"},
		{"open quoted secret value", `{"password": "abc`, `{"password": "`},
		{"closed quoted secret value", `{"password": "abc"`, `{"password": "[REDACTED]"`},
		{"digits may become a bot id", "count 1234", "count "},
		{"authorization header waits for end of line", "Authorization: Bearer abc", "Authorization: "},
		{"pem block waits for its end", "x\n-----BEGIN PRIVATE KEY-----\nMIIE", "x\n"},
		{"url password waits for @", "https://u:pass", "https://u:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			s := r.NewStream(rec.emit)
			s.Write(tt.write)
			if got := rec.all(); got != tt.emitted {
				t.Errorf("before Flush: emitted %q, want %q", got, tt.emitted)
			}
			s.Flush()
			if got, want := rec.all(), r.String(tt.write); got != want {
				t.Errorf("after Flush: emitted %q, want %q", got, want)
			}
			for _, p := range rec.parts {
				if p == "" {
					t.Error("emit called with an empty string")
				}
			}
		})
	}
}

func TestStreamSecretSplitAcrossWrites(t *testing.T) {
	r := New()
	r.AddValue("hunter2hunter2")
	var rec recorder
	s := r.NewStream(rec.emit)
	for _, chunk := range []string{"pw hun", "ter2hu", "nter2 and GITHUB_TO", "KEN=ghp_abcdefghijklmnop", "qrstuvwxyz0123456789\n"} {
		s.Write(chunk)
	}
	s.Flush()
	want := "pw [REDACTED] and GITHUB_TOKEN=[REDACTED]\n"
	if got := rec.all(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStreamFlushStartsNewText(t *testing.T) {
	var rec recorder
	s := New().NewStream(rec.emit)
	s.Write("API_KEY=")
	s.Flush()
	s.Write("abc123 ")
	s.Flush()
	// The second text has no name before its value.
	if got, want := rec.all(), "API_KEY=abc123 "; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStreamFailsClosedBeyondMaxHold(t *testing.T) {
	var rec recorder
	s := New().NewStream(rec.emit)
	s.Write(`"password": "`)
	secret := strings.Repeat("s3cr3t", MaxHold/6+1000)
	for i := 0; i < len(secret); i += 1000 {
		s.Write(secret[i:min(i+1000, len(secret))])
	}
	s.Write("\" done\nnext line token=abc123\n")
	s.Flush()
	got := rec.all()
	if strings.Contains(got, "s3cr3t") {
		t.Fatalf("held secret leaked after MaxHold: %.200q", got)
	}
	if want := `"password": "[REDACTED]` + "\nnext line token=[REDACTED]\n"; got != want {
		t.Errorf("got %.200q, want %q", got, want)
	}
}

func TestStreamNilRedactor(t *testing.T) {
	var r *Redactor
	var rec recorder
	s := r.NewStream(rec.emit)
	s.Write("token=abc")
	s.Write("123 ok")
	s.Flush()
	if got, want := rec.all(), "token=[REDACTED] ok"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Every piece a Stream emits is valid UTF-8 when the text is, however the
// text is cut (a delta sink encodes each piece as a JSON string).
func TestStreamEmitsWholeRunes(t *testing.T) {
	text := "Grüße 日本語 — ключ sk-proj-Abc123Def456Ghi789Jkl0 🙂 ende"
	for cut := 1; cut <= 7; cut++ {
		var pieces []string
		s := New().NewStream(func(p string) { pieces = append(pieces, p) })
		for i := 0; i < len(text); i += cut {
			s.Write(text[i:min(i+cut, len(text))])
		}
		s.Flush()
		for _, p := range pieces {
			if !utf8.ValidString(p) {
				t.Fatalf("cut %d: emitted %q, not valid UTF-8 (pieces %q)", cut, p, pieces)
			}
		}
		if got, want := strings.Join(pieces, ""), New().String(text); got != want {
			t.Fatalf("cut %d: %q, want %q", cut, got, want)
		}
	}
}

// A registered key echoed by a model, streamed in two pieces cut at every
// offset of the text around it: no piece emitted ever shows the key, or
// any 8-byte part of it, and the whole equals String of the whole.
func TestStreamSecretCutAtEveryOffset(t *testing.T) {
	const key = "odek-test-key-9f8e7d6c5b4a"
	text := "Sure! The key you gave me is " + key + ", keep it safe."
	r := New()
	r.AddValue(key)
	for cut := 0; cut <= len(text); cut++ {
		var rec recorder
		s := r.NewStream(rec.emit)
		s.Write(text[:cut])
		for _, p := range rec.parts {
			for i := 0; i+8 <= len(key); i++ {
				if strings.Contains(p, key[i:i+8]) {
					t.Fatalf("cut %d: piece %q shows part of the key before the rest arrived", cut, p)
				}
			}
		}
		s.Write(text[cut:])
		s.Flush()
		if got, want := rec.all(), r.String(text); got != want || strings.Contains(got, key) {
			t.Fatalf("cut %d: %q, want %q", cut, got, want)
		}
	}
}
