package hooks

import (
	"encoding/json"
	"errors"
	"testing"
)

func FuzzFromConfig(f *testing.F) {
	for _, s := range []string{
		`{"hooks":{"pre_tool":[{"command":["x"],"tools":["mcp_*"],"classes":["destructive"],"timeout_seconds":1.5}]}}`,
		`{"hooks":{"stop":[{"url":"https://a.example/h","headers":{"A":"b"}}]}}`,
		`{"hooks":{"pre_tool":[{"command":[""]}]}}`, `{"hooks":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := FromConfig(json.RawMessage(b))
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		if c == nil {
			return
		}
		for ev, hs := range c.Hooks {
			for _, h := range hs {
				if h.Timeout() <= 0 || h.Timeout() > MaxTimeout || (len(h.Command) == 0) == (h.URL == "") {
					t.Fatalf("%s: accepted hook %+v", ev, h)
				}
			}
		}
	})
}
