package llm

import (
	"encoding/json"
	"testing"
)

// A Request's OutputSchema goes out as response_format json_schema to the
// models listed in ResponseFormatModels only: strict when the schema
// already meets strict mode's rules, as guidance otherwise; the cached
// non-message part of the body follows a changed schema.
func TestResponseFormatOptIn(t *testing.T) {
	strictSchema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	looseSchema := `{"type":"object","properties":{"city":{"type":"string"},"note":{"type":"string"}},"required":["city"]}`
	so := schemaOpts{responseFormat: []string{"gpt-x"}}
	var cache msgCache
	for _, tc := range []struct {
		model, schema string
		want          string // "" ⇒ no response_format
	}{
		{"gpt-x", strictSchema, `{"type":"json_schema","json_schema":{"name":"odek_output","schema":` + strictSchema + `,"strict":true}}`},
		{"gpt-x", looseSchema, `{"type":"json_schema","json_schema":{"name":"odek_output","schema":` + looseSchema + `,"strict":false}}`},
		{"other", strictSchema, ""},
		{"gpt-x", "", ""},
	} {
		req := Request{Model: tc.model, Messages: []Message{{Role: RoleUser, Content: "hi"}}, OutputSchema: json.RawMessage(tc.schema)}
		if tc.schema == "" {
			req.OutputSchema = nil
		}
		body, err := encodeRequest(&req, false, &cache, nil, so)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatal(err)
		}
		got := string(top["response_format"])
		if got != tc.want {
			t.Errorf("%s with %.30s: response_format %s, want %s", tc.model, tc.schema, got, tc.want)
		}
	}
	if _, err := encodeRequest(&Request{Model: "gpt-x", Messages: []Message{{Role: RoleUser, Content: "x"}}, OutputSchema: json.RawMessage(`{`)}, false, nil, nil, so); err == nil {
		t.Error("an OutputSchema that is not JSON was sent")
	}
}
