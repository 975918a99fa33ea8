package speech

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAudioName(t *testing.T) {
	for _, c := range []struct{ name, mime, want string }{
		{"voice.ogg", "audio/ogg", "voice.ogg"},
		{"../../etc/Song One.MP3", "", "Song_One.MP3"},
		{`C:\x\talk.m4a`, "", "talk.m4a"},
		{".ogg", "", "audio.ogg"},
		{"notes.txt", "audio/x-flac", "audio.flac"},
		{"", "audio/mpeg; charset=x", "audio.mp3"},
		{"", "", "audio.ogg"},
		{strings.Repeat("a", 300) + ".wav", "", strings.Repeat("a", 96) + ".wav"},
	} {
		if got := AudioName(c.name, c.mime); got != c.want {
			t.Errorf("AudioName(%q, %q) = %q, want %q", c.name, c.mime, got, c.want)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	const key = "sk-secret-0123456789"
	for _, c := range []struct {
		status int
		body   string
		want   string
		err    string
	}{
		{200, `{"text":"  hello  "}`, "hello", ""},
		{200, `{"text":""}`, "", ""},
		{200, `{}`, "", `has no "text"`},
		{200, `not json`, "", `has no "text"`},
		{401, `{"error":{"message":"Incorrect API key provided: sk-secret-0123456789"}}`, "", "HTTP 401: Incorrect API key provided: <key>"},
		{500, ``, "", "HTTP 500: Internal Server Error"},
		{404, `{}`, "", "offers no speech-to-text"},
		{200, `{"text":"` + strings.Repeat("x", maxTranscriptBytes) + `"}`, "", "larger than"},
	} {
		got, err := parseAnswer(c.status, []byte(c.body), key)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("parseAnswer(%d, %.40q) = %q, %v; want %q, %q", c.status, c.body, got, err, c.want, c.err)
		}
	}
	_, err := parseAnswer(405, nil, "")
	var u interface{ Unsupported() bool }
	if !errors.Is(err, ErrNoTranscription) || !errors.As(err, &u) || !u.Unsupported() {
		t.Errorf("405: %v", err)
	}
}

// The endpoint's answer is untrusted: whatever it is, the transcript is
// valid UTF-8 and an error never carries the key.
func FuzzParseAnswer(f *testing.F) {
	const key = "sk-fuzz-key-0123456789"
	f.Add(200, []byte(`{"text":"hi"}`))
	f.Add(401, []byte(`{"error":{"message":"bad key sk-fuzz-key-0123456789"}}`))
	f.Add(200, []byte(`{"text":"\xff\xfe"}`))
	f.Add(404, []byte(``))
	f.Fuzz(func(t *testing.T, status int, data []byte) {
		got, err := parseAnswer(status, data, key)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 transcript %q", got)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Fatalf("error carries the key: %v", err)
		}
	})
}
