package ext

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func FuzzParseApprovals(f *testing.F) {
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"servers":{"` + goodKey + `":{"server":"s","approved_at":"2026-01-01T00:00:00Z"}},"tools":{}}`))
	f.Add([]byte(`{"version":1,"tools":{"` + goodKey + `":{"server":"s","tool":"t","approved_at":"2026-01-01T00:00:00Z"}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"tools":{"ABC":{}}}`))
	f.Add([]byte("\x00\xff{"))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseApprovals(data)
		if err != nil {
			if !errors.Is(err, ErrApprovals) {
				t.Fatalf("error does not wrap ErrApprovals: %v", err)
			}
			return
		}
		for k := range a.Servers {
			if !isKey(k) {
				t.Fatalf("accepted key %q", k)
			}
		}
		for k := range a.Tools {
			if !isKey(k) {
				t.Fatalf("accepted key %q", k)
			}
		}
		b, err := ParseApprovals(a.Marshal())
		if err != nil || len(b.Servers) != len(a.Servers) || len(b.Tools) != len(a.Tools) {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"fs":{"command":"fs-mcp","args":["--serve"],"env":{"A":"1"},"timeout_seconds":120}}`), []byte(`{"p":{"command":"./srv","auto_approve":true}}`))
	f.Add([]byte(`{"x":{"command":"c","max_response_bytes":99999999999,"max_result_chars":-1}}`), []byte(`null`))
	f.Add([]byte(`{"a__b":{"command":"c"},"ok":{"command":"c","danger_class":"safe","artifact_roots":["r","/abs"]}}`), []byte(`{"ok":{"command":"d"}}`))
	f.Add([]byte(`[1,2]`), []byte(`{}`))
	f.Add([]byte(`{"s":{"command":"c","timeout_seconds":9223372036854775807,"startup_timeout_seconds":1e3}}`), []byte(``))
	f.Add([]byte(`{"gh":{"url":"https://h/mcp?t=1","headers":{"Authorization":"Bearer ${GITHUB_TOKEN}","X":"${"},"protocol_version":"2025-11-25"}}`),
		[]byte(`{"w":{"url":"http://10.0.0.1/mcp","allow_insecure_http":true,"headers":{"A":"${B}"}},"l":{"url":"http://[::1]:9/mcp","command":"x"}}`))
	f.Fuzz(func(t *testing.T, op, pr []byte) {
		specs, _, err := ParseConfig(Section{Path: "/h/config.json", Raw: json.RawMessage(op)}, Section{Path: "/p/odek.json", Raw: json.RawMessage(pr)})
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range specs {
			if seen[s.Name] {
				t.Fatalf("server %q twice", s.Name)
			}
			seen[s.Name] = true
			if s.Err != nil {
				if !errors.Is(s.Err, ErrConfig) {
					t.Fatalf("spec error does not wrap ErrConfig: %v", s.Err)
				}
				continue
			}
			if s.Timeout <= 0 || s.Timeout > 3600e9 || s.StartupTimeout <= 0 || s.StartupTimeout > MaxStartupTimeout ||
				s.MaxResponseBytes <= 0 || s.MaxResponseBytes > 64<<20 || s.MaxResultChars <= 0 || s.MaxResultChars > 1000000 {
				t.Fatalf("limits out of range: %+v", s)
			}
			if (s.Command == "") == (s.URL == "") || strings.IndexByte(s.Command, 0) >= 0 {
				t.Fatalf("command %q url %q", s.Command, s.URL)
			}
			if s.URL != "" {
				if err := checkServerURL(s.URL, s.AllowInsecureHTTP); err != nil {
					t.Fatalf("url %q accepted: %v", s.URL, err)
				}
				if _, _, err := s.ClientConfig([]string{"GITHUB_TOKEN=x", "B=y"}, ""); err != nil && !errors.Is(err, ErrConfig) {
					t.Fatalf("header resolution error does not wrap ErrConfig: %v", err)
				}
				for _, v := range s.Headers {
					if s.Source == SourceProject && strings.Contains(v, "${") {
						t.Fatalf("project header with a reference accepted: %q", v)
					}
				}
			}
			if s.Source == SourceProject && (s.AutoApprove || s.AllowInsecureHTTP || s.DangerClass != DefaultDangerClass) {
				t.Fatalf("project entry kept operator-only fields: %+v", s)
			}
			for _, r := range s.ArtifactRoots {
				if !strings.HasPrefix(r, "/") {
					t.Fatalf("relative root %q", r)
				}
			}
			_ = SpawnKey(&s)
		}
	})
}
