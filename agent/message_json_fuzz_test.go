package agent

import (
	"encoding/json"
	"testing"
)

// FuzzMessageJSON: decoding a session's message never panics; what decodes
// encodes back to valid JSON whose form is stable after one round trip;
// (internal/jsonwire's FuzzCollectExtra checks its quick scan).
func FuzzMessageJSON(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"x"}}}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:,"}}],"reasoning_content":"r"}`,
		`{"role":"tool","tool_call_id":"c1","content":"ok","name":"f","x":[],"y":{},"z":null}`,
		`{"role":"assistant","content":"","Content":"shadow","re\u0061soning":"esc"}`,
		`{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"a":[1,2]}},"index":0}]}`,
		`  { "role" : "user" , "content" : "sp" , "extra" : { "a" : "}" } }  `,
		`[1,2]`, `{`, `{"role":`, `{"a":"\"}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			return
		}
		out, err := m.MarshalJSON()
		if err != nil {
			t.Fatalf("decoded message does not encode: %v (%s)", err, b)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %s from %s", out, b)
		}
		// One round trip normalises (invalid UTF-8 becomes U+FFFD, escaped
		// the first time); from then on the form is stable.
		second := roundTrip(t, out)
		if third := roundTrip(t, second); string(third) != string(second) {
			t.Fatalf("not stable:\n%s\n%s", second, third)
		}
	})
}

func roundTrip(t *testing.T, b []byte) []byte {
	t.Helper()
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("re-decode: %v (%s)", err, b)
	}
	out, err := m.MarshalJSON()
	if err != nil {
		t.Fatalf("re-encode: %v (%s)", err, b)
	}
	return out
}
