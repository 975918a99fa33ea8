package outschema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const personSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1},
    "age": {"type": "integer", "minimum": 0},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"type": "string"}, "prefixItems": [{"const": "first"}]}
  },
  "required": ["name", "age"],
  "additionalProperties": false
}`

func TestCheck(t *testing.T) {
	s, err := Compile([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		answer  string
		notJSON bool
		want    string // "" ⇒ valid; else a substring of the reasons
	}{
		{`{"name":"Ada","age":36}`, false, ""},
		{"```json\n{\"name\":\"Ada\",\"age\":36}\n```", false, ""},
		{"  {\"name\":\"Ada\",\"age\":36}\n", false, ""},
		{`{"name":"Ada"}`, false, "age"},
		{`{"name":"Ada","age":-1}`, false, "/age"},
		{`{"name":"Ada","age":1.5}`, false, "/age"},
		{`{"name":"Ada","age":1,"extra":true}`, false, "extra"},
		{`{"name":"Ada","age":1,"email":"not-an-email"}`, false, "/email"},
		{`{"name":"Ada","age":1,"tags":["second"]}`, false, "/tags/0"}, // 2020-12 prefixItems
		{`Here is the JSON: {"name":"Ada","age":1}`, true, "not a JSON value"},
		{`{"name":"Ada","age":1} trailing`, true, "not a JSON value"},
		{"```python\n{}\n```", true, ""},
		{``, true, ""},
	}
	for _, c := range cases {
		v, err := s.Check(c.answer)
		if c.want == "" && !c.notJSON {
			if err != nil || v == nil {
				t.Errorf("%q: %v", c.answer, err)
			}
			continue
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || !errors.Is(err, ErrOutputInvalid) || ie.NotJSON != c.notJSON || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v (notJSON %v), want reasons with %q", c.answer, err, ie != nil && ie.NotJSON, c.want)
		}
	}
}

func TestCompileRefusals(t *testing.T) {
	for _, doc := range []string{
		`{"$ref": "https://example.com/schema.json"}`,
		`{"$ref": "file:///etc/passwd"}`,
		`{"type": "nonsense"}`,
		`[1,2]`,
		`not json`,
	} {
		if _, err := Compile([]byte(doc)); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: %v", doc, err)
		}
	}
	if _, err := Compile(make([]byte, MaxSchemaBytes+1)); err == nil || !strings.Contains(err.Error(), "MaxSchemaBytes") {
		t.Errorf("oversized: %v", err)
	}
	// Local $defs refs work; the draft defaults to 2020-12.
	if _, err := Compile([]byte(`{"$defs":{"n":{"type":"number"}},"$ref":"#/$defs/n"}`)); err != nil {
		t.Errorf("local ref: %v", err)
	}
	p := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(p, []byte(personSchema), 0o644)
	if _, err := LoadFile(p); err != nil {
		t.Fatal(err)
	}
}

func TestChecker(t *testing.T) {
	s, _ := Compile([]byte(personSchema))
	// Valid at once.
	c := NewChecker(s, 2)
	if fix, ev := c.Check(`{"name":"a","age":1}`); fix != "" || ev != nil {
		t.Fatalf("valid: %q %v", fix, ev)
	}
	if v, err := c.Result(); err != nil || v.(map[string]any)["name"] != "a" {
		t.Fatalf("result: %v %v", v, err)
	}
	// Repaired: the corrective names the fault; the event says attempt 1 of 3.
	c = NewChecker(s, 2)
	fix, ev := c.Check(`{"name":"a"}`)
	if !strings.Contains(fix, "age") || ev == nil || ev.EventType() != EventOutputInvalid || ev.Data()["attempt"] != 1 || ev.Data()["max_attempts"] != 3 {
		t.Fatalf("invalid: %q %v", fix, ev)
	}
	if _, err := c.Result(); !errors.Is(err, ErrOutputInvalid) {
		t.Fatal("an invalid answer is the result until a valid one comes")
	}
	c.Check(`{"name":"a","age":2}`)
	if v, err := c.Result(); err != nil || v == nil || c.Attempts() != 2 {
		t.Fatalf("repaired: %v %v", v, err)
	}
	// Still invalid after the repairs: no more corrective, the error.
	c = NewChecker(s, 1)
	c.Check("no")
	fix, ev = c.Check("still no")
	var ie *InvalidError
	if _, err := c.Result(); fix != "" || ev == nil || !errors.As(err, &ie) || ie.Attempts != 2 {
		t.Fatalf("failing: %q %v %v", fix, ev, err)
	}
	// No answer at all.
	if _, err := NewChecker(s, 1).Result(); !errors.Is(err, ErrOutputInvalid) {
		t.Fatal(err)
	}
}

func FuzzCheck(f *testing.F) {
	s, err := Compile([]byte(personSchema))
	if err != nil {
		f.Fatal(err)
	}
	for _, a := range []string{`{"name":"a","age":1}`, "```json\n[]\n```", "```\n```", `{"age":1e400}`, `"\ud800"`, "```json```"} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, a string) {
		v, err := s.Check(a)
		if err == nil && v == nil {
			t.Fatal("valid answer with no value")
		}
		if err != nil && !errors.Is(err, ErrOutputInvalid) {
			t.Fatalf("error does not wrap ErrOutputInvalid: %v", err)
		}
		if len(Extract(a)) > len(a) {
			t.Fatal("Extract grew the answer")
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	s, _ := Compile([]byte(personSchema))
	answer := `{"name":"Ada Lovelace","age":36,"email":"ada@example.com","tags":["first","math"]}`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Check(answer); err != nil {
			b.Fatal(err)
		}
	}
}
