package bottest

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The fake's sendVoice refuses what the Bot API refuses, so a test that
// passes against it sends what Telegram takes.
func TestSendVoiceIsStrict(t *testing.T) {
	s := New(t)
	post := func(fields map[string]string, part string, file []byte) (int, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for k, v := range fields {
			mw.WriteField(k, v)
		}
		if part != "" {
			w, _ := mw.CreateFormFile(part, "answer.ogg")
			w.Write(file)
		}
		mw.Close()
		resp, err := http.Post(s.URL()+"/bot"+Token+"/sendVoice", mw.FormDataContentType(), &body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Description string `json:"description"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r.Description
	}
	ogg := []byte("OggS\x00\x02abc")
	for _, c := range []struct {
		name   string
		fields map[string]string
		part   string
		file   []byte
		want   string
	}{
		{"no voice", map[string]string{"chat_id": "1"}, "", nil, "there is no voice"},
		{"wrong part", map[string]string{"chat_id": "1"}, "document", ogg, "there is no voice"},
		{"not OGG", map[string]string{"chat_id": "1"}, "voice", []byte("ID3 mp3"), "OGG/Opus"},
		{"caption too long", map[string]string{"chat_id": "1", "caption": strings.Repeat("x", 1025)}, "voice", ogg, "caption is too long"},
		{"HTML caption too long after parsing", map[string]string{"chat_id": "1", "parse_mode": "HTML", "caption": "<b>" + strings.Repeat("x", 1025) + "</b>"}, "voice", ogg, "caption is too long"},
		{"bad HTML", map[string]string{"chat_id": "1", "parse_mode": "HTML", "caption": "<b>x"}, "voice", ogg, "can't parse entities"},
		{"unknown parameter", map[string]string{"chat_id": "1", "captoin": "x"}, "voice", ogg, "unknown parameter captoin"},
		{"unknown topic", map[string]string{"chat_id": "1", "message_thread_id": "7"}, "voice", ogg, "message thread not found"},
	} {
		if status, desc := post(c.fields, c.part, c.file); status != 400 || !strings.Contains(desc, c.want) {
			t.Errorf("%s: %d %q, want 400 %q", c.name, status, desc, c.want)
		}
	}
	// A caption of 1024 characters after entity parsing is fine.
	if status, desc := post(map[string]string{"chat_id": "1", "parse_mode": "HTML", "caption": "<b>" + strings.Repeat("x", 1024) + "</b>"}, "voice", ogg); status != 200 {
		t.Fatalf("valid voice: %d %q", status, desc)
	}
	m := s.Messages(1)
	if len(m) != 1 || !bytes.Equal(m[0].Voice, ogg) || m[0].Caption != strings.Repeat("x", 1024) {
		t.Errorf("stored %+v", m)
	}
	// Form-encoded (no upload) is refused.
	resp, err := http.PostForm(s.URL()+"/bot"+Token+"/sendVoice", url.Values{"chat_id": {"1"}, "voice": {"AwACAgIAAx"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("file_id voice: %d, want 400 (this fake takes uploads)", resp.StatusCode)
	}
}
