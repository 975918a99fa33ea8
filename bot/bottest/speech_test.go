package bottest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The fake speech endpoint refuses what OpenAI's documented API refuses
// (https://platform.openai.com/docs/api-reference/audio/createSpeech).
func TestSpeechIsStrict(t *testing.T) {
	f := NewSpeech(t)
	post := func(ct, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, f.URL()+"/audio/speech", strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+f.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	long := strings.Repeat("a", 4097)
	for _, c := range []struct{ name, ct, body, want string }{
		{"form body", "application/x-www-form-urlencoded", "model=tts-1", "must be JSON"},
		{"no model", "application/json", `{"input":"hi","voice":"alloy"}`, "'model'"},
		{"no input", "application/json", `{"model":"tts-1","voice":"alloy"}`, "'input'"},
		{"no voice", "application/json", `{"model":"tts-1","input":"hi"}`, "'voice'"},
		{"input too long", "application/json", `{"model":"tts-1","input":"` + long + `","voice":"alloy"}`, "maximum length 4096"},
		{"bad format", "application/json", `{"model":"tts-1","input":"hi","voice":"alloy","response_format":"ogg"}`, "Supported values"},
		{"speed", "application/json", `{"model":"tts-1","input":"hi","voice":"alloy","speed":4.5}`, "between 0.25 and 4.0"},
		{"instructions with tts-1", "application/json", `{"model":"tts-1","input":"hi","voice":"alloy","instructions":"calm"}`, "not supported"},
		{"unknown field", "application/json", `{"model":"tts-1","input":"hi","voice":"alloy","format":"opus"}`, "Unrecognized request argument supplied: format"},
	} {
		if status, body := post(c.ct, c.body); status != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 400 %q", c.name, status, body, c.want)
		}
	}
	status, body := post("application/json", `{"model":"gpt-4o-mini-tts","input":"hi","voice":"alloy","response_format":"opus","speed":1.5}`)
	if status != 200 || body != string(SpokenOGG("hi")) {
		t.Errorf("valid request: %d %q", status, body)
	}
}
