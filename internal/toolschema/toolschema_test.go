package toolschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// canon re-encodes JSON with sorted keys so that tests compare meaning.
func canon(t *testing.T, s []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		t.Fatalf("not JSON: %s: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func kinds(rs []Repair) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path+" "+r.Kind)
	}
	return out
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
		repairs        []string
		err            error
	}{
		{name: "already fine", in: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			want: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`},
		{name: "absent", in: ``, want: `{"type":"object","properties":{}}`, repairs: []string{" empty_schema"}},
		{name: "null", in: ` null `, want: `{"type":"object","properties":{}}`, repairs: []string{" empty_schema"}},
		{name: "no top-level type", in: `{"properties":{"q":{"type":"string"}}}`,
			want: `{"type":"object","properties":{"q":{"type":"string"}}}`, repairs: []string{" added_type_object"}},
		{name: "empty object", in: `{}`, want: `{"type":"object","properties":{}}`,
			repairs: []string{" added_type_object", " added_properties"}},
		{name: "type null", in: `{"type":null,"properties":{}}`, want: `{"type":"object","properties":{}}`,
			repairs: []string{" added_type_object"}},
		{name: "type list with object", in: `{"type":["object","null"],"properties":{}}`,
			want: `{"type":"object","properties":{}}`, repairs: []string{" type_list_to_object"}},
		{name: "object without properties", in: `{"type":"object"}`, want: `{"type":"object","properties":{}}`,
			repairs: []string{" added_properties"}},
		{name: "null properties", in: `{"type":"object","properties":null}`, want: `{"type":"object","properties":{}}`,
			repairs: []string{" added_properties"}},
		{name: "nested array without items",
			in:      `{"type":"object","properties":{"tags":{"type":"array"},"m":{"type":"object","properties":{"x":{"type":["array","null"]}}}}}`,
			want:    `{"type":"object","properties":{"tags":{"type":"array","items":{}},"m":{"type":"object","properties":{"x":{"type":["array","null"],"items":{}}}}}}`,
			repairs: []string{"/properties/m/properties/x added_items", "/properties/tags added_items"}},
		{name: "tuple array keeps prefixItems", in: `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"number"}]}}}`,
			want: `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"number"}]}}}`},
		{name: "required names a missing property",
			in:      `{"type":"object","properties":{"a":{}},"required":["a","b","a",3]}`,
			want:    `{"type":"object","properties":{"a":{}},"required":["a"]}`,
			repairs: []string{" dropped_required"}},
		{name: "required not a list", in: `{"type":"object","properties":{},"required":"a"}`,
			want: `{"type":"object","properties":{}}`, repairs: []string{" dropped_required"}},
		{name: "required all bogus", in: `{"type":"object","properties":{},"required":["x"]}`,
			want: `{"type":"object","properties":{}}`, repairs: []string{" dropped_required"}},
		{name: "inside anyOf and $defs", in: `{"type":"object","properties":{"v":{"anyOf":[{"type":"array"},{"type":"string"}]}},"$defs":{"D":{"type":"object"}}}`,
			want:    `{"type":"object","properties":{"v":{"anyOf":[{"type":"array","items":{}},{"type":"string"}]}},"$defs":{"D":{"type":"object","properties":{}}}}`,
			repairs: []string{"/properties/v/anyOf/0 added_items", "/$defs/D added_properties"}},
		{name: "pointer escaping", in: `{"type":"object","properties":{"a/b~c":{"type":"array"}}}`,
			want: `{"type":"object","properties":{"a/b~c":{"type":"array","items":{}}}}`, repairs: []string{"/properties/a~1b~0c added_items"}},
		{name: "numbers kept as written", in: `{"properties":{"n":{"type":"integer","maximum":12345678901234567890}}}`,
			want: `{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890}}}`, repairs: []string{" added_type_object"}},
		{name: "top-level array", in: `[{"type":"object"}]`, err: ErrNotObject},
		{name: "top-level string type", in: `{"type":"string"}`, err: ErrNotObject},
		{name: "type list without object", in: `{"type":["string","null"]}`, err: ErrNotObject},
		{name: "type a number", in: `{"type":1}`, err: ErrNotObject},
		{name: "properties an array", in: `{"type":"object","properties":[]}`, err: ErrNotObject},
		{name: "invalid JSON", in: `{"type":`, err: ErrInvalid},
		{name: "too deep", in: deep(MaxDepth + 2), err: ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rs, err := Normalize([]byte(tt.in))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := canon(t, out), canon(t, []byte(tt.want)); got != want {
				t.Errorf("schema = %s\nwant     %s", got, want)
			}
			if got := kinds(rs); !reflect.DeepEqual(got, tt.repairs) {
				t.Errorf("repairs = %q, want %q", got, tt.repairs)
			}
			for _, r := range rs {
				if r.Detail == "" || r.String() == "" {
					t.Errorf("repair %+v has no detail", r)
				}
			}
		})
	}
}

func deep(n int) string {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{"x":`)
	for range n {
		b.WriteString(`{"items":`)
	}
	b.WriteString(`{}`)
	for range n {
		b.WriteString(`}`)
	}
	b.WriteString(`}}`)
	return b.String()
}

func TestNormalizeUnchangedIsSameSlice(t *testing.T) {
	in := []byte(`{"type":"object","properties":{}}`)
	out, rs, err := Normalize(in)
	if err != nil || rs != nil || &out[0] != &in[0] {
		t.Fatalf("Normalize of a fine schema: out=%s repairs=%v err=%v (want the input slice back)", out, rs, err)
	}
}

func TestNormalizeIdempotent(t *testing.T) {
	in := []byte(`{"properties":{"a":{"type":"array"},"b":{"type":"object"}},"required":["a","z"]}`)
	once, _, err := Normalize(in)
	if err != nil {
		t.Fatal(err)
	}
	twice, rs, err := Normalize(once)
	if err != nil || rs != nil || !bytes.Equal(once, twice) {
		t.Fatalf("second Normalize changed %s into %s (%v, %v)", once, twice, rs, err)
	}
}

func TestAdapt(t *testing.T) {
	gemini := QuirksFor("gemini")
	tests := []struct {
		name, in, want string
		q              Quirks
		repairs        []string
		err            error
	}{
		{name: "no quirks", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`,
			want: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`},
		{name: "inline $defs", q: Quirks{InlineRefs: true},
			in:      `{"type":"object","properties":{"a":{"$ref":"#/$defs/A","description":"the a"},"b":{"type":"array","items":{"$ref":"#/definitions/B"}}},"$defs":{"A":{"type":"string","description":"generic"}},"definitions":{"B":{"type":"object","properties":{"c":{"$ref":"#/$defs/A"}}}}}`,
			want:    `{"type":"object","properties":{"a":{"type":"string","description":"the a"},"b":{"type":"array","items":{"type":"object","properties":{"c":{"type":"string","description":"generic"}}}}}}`,
			repairs: []string{"/properties/a inlined_ref", "/properties/b/items inlined_ref", "/properties/b/items/properties/c inlined_ref", " inlined_ref", " inlined_ref"}},
		{name: "recursive ref", q: Quirks{InlineRefs: true},
			in: `{"type":"object","properties":{"n":{"$ref":"#/$defs/Node"}},"$defs":{"Node":{"type":"object","properties":{"next":{"$ref":"#/$defs/Node"}}}}}`, err: ErrBadRef},
		{name: "dangling ref", q: Quirks{InlineRefs: true}, in: `{"type":"object","properties":{"n":{"$ref":"#/$defs/Nope"}}}`, err: ErrBadRef},
		{name: "remote ref", q: Quirks{InlineRefs: true}, in: `{"type":"object","properties":{"n":{"$ref":"https://example.com/s.json"}}}`, err: ErrBadRef},
		{name: "gemini keywords", q: gemini,
			in:      `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,"properties":{"mode":{"const":"fast","default":"fast"},"n":{"type":["integer","null"],"exclusiveMinimum":0},"v":{"type":["string","number"]},"m":{"type":"object","properties":{"$schema":{"type":"string"}},"propertyNames":{"pattern":"^a"}},"o":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			want:    `{"type":"object","properties":{"mode":{"enum":["fast"],"default":"fast"},"n":{"type":"integer","nullable":true},"v":{"anyOf":[{"type":"string"},{"type":"number"}]},"m":{"type":"object","properties":{"$schema":{"type":"string"}}},"o":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`,
			repairs: []string{" dropped_keyword", " dropped_keyword", "/properties/m dropped_keyword", "/properties/mode dropped_keyword", "/properties/n dropped_keyword", "/properties/n dropped_keyword", "/properties/o dropped_keyword", "/properties/v dropped_keyword"}},
		{name: "strict", q: Quirks{Strict: true},
			in:      `{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"},"opts":{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]}},"required":["path"]}`,
			want:    `{"type":"object","additionalProperties":false,"required":["limit","opts","path"],"properties":{"path":{"type":"string"},"limit":{"type":["integer","null"]},"opts":{"type":["object","null"],"additionalProperties":false,"required":["x"],"properties":{"x":{"type":"boolean"}}}}}`,
			repairs: []string{" strict", "/properties/opts strict"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rs, err := Adapt([]byte(tt.in), tt.q)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := canon(t, out), canon(t, []byte(tt.want)); got != want {
				t.Errorf("schema = %s\nwant     %s", got, want)
			}
			if got := kinds(rs); !reflect.DeepEqual(got, tt.repairs) {
				t.Errorf("repairs = %q, want %q", got, tt.repairs)
			}
		})
	}
}

func TestQuirksFor(t *testing.T) {
	tests := []struct {
		provider   string
		inline     bool
		dropSchema bool
	}{
		{"", false, false},
		{"openai", false, false},
		{"deepseek", false, false},
		{"gemini", true, true},
		{"Gemini", true, true},
		{"vertex", true, true},
		{"nonsense", false, false},
	}
	for _, tt := range tests {
		q := QuirksFor(tt.provider)
		hasSchema := slices.Contains(q.DropKeywords, "$schema") || len(q.AllowKeywords) > 0 && !slices.Contains(q.AllowKeywords, "$schema")
		if q.InlineRefs != tt.inline || hasSchema != tt.dropSchema || q.Strict {
			t.Errorf("QuirksFor(%q) = %+v", tt.provider, q)
		}
	}
}

// FuzzNormalize: schemas come from untrusted MCP servers. Normalize must
// not panic, must return valid JSON that is a fixed point, and Adapt with
// every quirk must not panic either.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"type":"object"}`, `[1]`, `{"properties":{"a":{"type":"array"}},"required":["a","b"]}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/A"}}}`,
		`{"type":["object"],"properties":{"x":{"type":["string","null"],"const":1}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _, err := Normalize(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Normalize(%q) = invalid JSON %q", in, out)
		}
		again, rs, err := Normalize(out)
		if err != nil || len(rs) > 0 || !bytes.Equal(again, out) {
			t.Fatalf("Normalize is not idempotent on %q: %q %v %v", out, again, rs, err)
		}
		q := QuirksFor("gemini")
		q.Strict = true
		if ad, _, err := Adapt(out, q); err == nil && !json.Valid(ad) {
			t.Fatalf("Adapt(%q) = invalid JSON %q", out, ad)
		}
	})
}
