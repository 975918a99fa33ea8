package jsonwire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString: the hand-written encoder writes what encoding/json
// writes (HTML escaping off) for any string, valid UTF-8 or not, and
// StringValue reads it back to the same text json.Unmarshal gives.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" and \\ back", "ctl \x00\x01\x1f\t\n\r\b\f", "<html> & 'x'", "\u2028\u2029", "bad \xff\xfe utf8", "emoji 🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got := AppendString(nil, s)
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, want.Bytes())
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if v, ok := StringValue(got); !ok || v != back {
			t.Fatalf("StringValue(%s) = %q %v, want %q", got, v, ok, back)
		}
	})
}

func TestContentAndArguments(t *testing.T) {
	for raw, want := range map[string]string{`"hi"`: "hi", `null`: "", `[{"type":"text","text":"a"},{"type":"image_url"},{"text":"b"}]`: "ab", ` 7 `: ""} {
		if got := ContentText(json.RawMessage(raw)); got != want {
			t.Errorf("ContentText(%s) = %q, want %q", raw, got, want)
		}
	}
	for raw, want := range map[string]string{`"{\"a\":1}"`: `{"a":1}`, `{ "a" : 1 }`: `{"a":1}`, `null`: "", `[1, 2]`: `[1,2]`} {
		if got := ArgumentsText(json.RawMessage(raw)); got != want {
			t.Errorf("ArgumentsText(%s) = %q, want %q", raw, got, want)
		}
	}
}

// FuzzCollectExtra: the quick scan (mayHaveExtra) never says "no provider
// fields" when the full decode finds some, and CollectExtra keeps exactly
// the members that are neither known, skipped nor empty.
func FuzzCollectExtra(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":null,"tool_calls":[],"reasoning_content":"r"}`,
		`{"role":"tool","tool_call_id":"c1","content":"ok","name":"f","x":[],"y":{},"z":null}`,
		`{"role":"assistant","content":"","Content":"shadow","re\u0061soning":"esc"}`,
		`  { "role" : "user" , "content" : "sp" , "extra" : { "a" : "}" } }  `,
		`{"index":0,"id":"c","function":{"name":"f"}}`,
		`[1,2]`, `{`, `{"role":`, `{"a":"\"}`, `null`,
	} {
		f.Add([]byte(s))
	}
	known, skipped := []string{"role", "content", "tool_calls", "tool_call_id", "name", "id", "function"}, []string{"index"}
	f.Fuzz(func(t *testing.T, b []byte) {
		var all map[string]json.RawMessage
		if json.Unmarshal(b, &all) != nil {
			return
		}
		want := map[string]bool{}
		for k, v := range all {
			if !IsOneOf(k, known) && !IsOneOf(k, skipped) && !Empty(v) {
				want[k] = true
			}
		}
		if len(want) > 0 && !mayHaveExtra(b, known, skipped) {
			t.Fatalf("quick scan missed a provider field in %s", b)
		}
		extra, err := CollectExtra(b, known, skipped)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]json.RawMessage
		if len(extra) > 0 {
			if err := json.Unmarshal(extra, &got); err != nil {
				t.Fatalf("extra %s: %v", extra, err)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("extra %s, want the members %v", extra, want)
		}
		for k := range got {
			if !want[k] {
				t.Fatalf("extra keeps %q", k)
			}
		}
	})
}
