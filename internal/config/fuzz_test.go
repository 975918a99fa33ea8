package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzProjectFile feeds arbitrary bytes as ./odek.json. Load must never
// panic, and whatever the bytes, the project must not change the API key,
// the base URL or the danger policy set by the operator.
func FuzzProjectFile(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"model":"m","max_iterations":5,"llm":{"stream":false},"tools":{"max_output_bytes":10}}`,
		`{"api_key":"evil","base_url":"https://evil.example","dangerous":{"classes":{"destructive":"allow"},"non_interactive":"allow"}}`,
		`{"API_KEY":"x","Base_Url":"http://evil","DANGEROUS":{},"api_key":null}`,
		`{"api_key":1,"base_url":[],"dangerous":"allow"}`,
		`{"model":"a","model":"b","Model":"c"}`,
		`{"llm":{"max_attempts":-1}}`,
		`{"llm":{"request_timeout_seconds":99999999999999999999}}`,
		`{"mcp_servers":{"x":{"command":"/bin/sh"}}}`,
		"\xef\xbb\xbf{\"model\":\"bom\"}",
		`{"a":`, `[]`, `null`, ``, "{\"model\":\"\xff\"}", `{"tools":{"max_output_bytes":1e400}}`,
	} {
		f.Add([]byte(seed))
	}
	const opPath, projPath = "/home/op/.odek/config.json", "/work/proj/odek.json"
	op := fileInput{path: opPath, mode: 0o600, data: []byte(
		`{"api_key":"op-key","base_url":"https://op.example/v1","dangerous":{"classes":{"destructive":"deny"},"non_interactive":"deny"}}`)}
	wantD := Dangerous{Classes: map[string]Action{"destructive": ActionDeny}, NonInteractive: ActionDeny}

	f.Fuzz(func(t *testing.T, data []byte) {
		c, warns, err := build(op, fileInput{path: projPath, mode: 0o644, data: data}, envVars{}, Flags{}, nil)
		if err != nil {
			return
		}
		if c.APIKey != "op-key" || c.BaseURL != "https://op.example/v1" || !reflect.DeepEqual(c.Dangerous, wantD) {
			t.Fatalf("project changed a protected setting: key=%q base=%q dangerous=%+v", c.APIKey, c.BaseURL, c.Dangerous)
		}
		for k, v := range c.Sources {
			if v == SourceProject && (k == "api_key" || k == "base_url" || len(k) >= 9 && k[:9] == "dangerous") {
				t.Fatalf("Sources[%q] = project", k)
			}
		}
		if c.MaxIterations <= 0 || c.MaxToolParallel <= 0 || c.Tools.MaxOutputBytes <= 0 || c.LLM.RequestTimeoutSeconds < 0 {
			t.Fatalf("invalid resolved numbers: %+v", c)
		}
		for _, w := range warns {
			if w.Source != projPath {
				t.Fatalf("warning about another file: %v", w)
			}
		}
		// Other packages read sections from the raw project layer.
		var anyv any
		if _, err := c.Layers.Project.Section("mcp_servers", &anyv); err != nil {
			t.Fatalf("Section on a file build accepted: %v", err)
		}
		if c.Layers.Project.Path != filepath.Clean(projPath) {
			t.Fatalf("project layer path %q", c.Layers.Project.Path)
		}
	})
}
