package llmtest

import (
	"strings"
	"testing"
)

// The fake refuses the response_format shapes the endpoint refuses.
func TestFakeChecksResponseFormat(t *testing.T) {
	for _, tc := range []struct{ rf, want string }{
		{`{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object"}}}`, ""},
		{`{"type":"json_object"}`, ""},
		{`{"type":"xml"}`, "Supported values are"},
		{`{"type":"json_schema"}`, "Missing required parameter: 'response_format.json_schema'"},
		{`{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}`, "does not match pattern"},
		{`{"type":"json_schema","json_schema":{"name":"o","schema":[]}}`, "expected an object"},
		{`{"type":"json_schema","json_schema":{"name":"o","strict":true,"schema":{"type":"array"}}}`, `got 'type: "array"'`},
		{`{"type":"json_schema","json_schema":{"name":"o","strict":true,"schema":{"type":"object","properties":{"a":{}}}}}`, "'additionalProperties' is required"},
		{`{"type":"json_schema","json_schema":{"name":"o","strict":true,"schema":{"type":"object","additionalProperties":false,"properties":{"a":{}}}}}`, "Missing 'a'"},
	} {
		got := checkResponseFormat([]byte(tc.rf))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.rf, got, tc.want)
		}
	}
}
