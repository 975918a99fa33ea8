package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// env is a test environment that never touches the process environment.
func env(kv ...string) []string { return append([]string{}, kv...) }

// dirs creates a home and a project directory with the given files ("" =
// no file) and returns Options for them.
func dirs(t *testing.T, operator, project string) Options {
	t.Helper()
	root := t.TempDir()
	o := Options{Home: filepath.Join(root, "home"), ProjectDir: filepath.Join(root, "proj"), Environ: env()}
	for _, d := range []string{o.Home, o.ProjectDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if operator != "" {
		writeFile(t, filepath.Join(o.Home, OperatorFileName), operator, 0o600)
	}
	if project != "" {
		writeFile(t, filepath.Join(o.ProjectDir, ProjectFileName), project, 0o644)
	}
	return o
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
}

func mustLoad(t *testing.T, o Options) (*Config, []Warning) {
	t.Helper()
	c, w, err := Load(o)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c, w
}

func TestLoadDefaults(t *testing.T) {
	c, w := mustLoad(t, dirs(t, "", ""))
	if len(w) != 0 {
		t.Errorf("warnings = %v, want none", w)
	}
	want := Config{
		MaxIterations:   90,
		MaxToolParallel: 4,
		Dangerous:       Dangerous{NonInteractive: ActionDeny},
		LLM:             LLM{Stream: true},
		Tools:           Tools{MaxOutputBytes: 64 << 10},
	}
	got := *c
	got.Home, got.ProjectDir, got.Sources, got.Layers, got.MCPServers = "", "", nil, Layers{}, MCPServers{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %#v\nwant %#v", got, want)
	}
	for k, v := range c.Sources {
		if v != SourceDefault {
			t.Errorf("Sources[%q] = %q, want default", k, v)
		}
	}
	if c.Layers.Operator.Exists() || c.Layers.Project.Exists() {
		t.Errorf("layers exist without files: %v", c.Layers)
	}
	if !filepath.IsAbs(c.Home) || !filepath.IsAbs(c.ProjectDir) {
		t.Errorf("Home %q / ProjectDir %q not absolute", c.Home, c.ProjectDir)
	}
}

func TestLoadPrecedence(t *testing.T) {
	const operator = `{
		"api_key": "op-key", "base_url": "https://op.example/v1/", "model": "op-model",
		"max_iterations": 10, "max_tool_parallel": 2, "system_prompt": "op prompt",
		"llm": {"stream": false, "max_attempts": 5, "idle_timeout_seconds": 30, "request_timeout_seconds": 600},
		"tools": {"shell_timeout_seconds": 120, "max_output_bytes": 1000},
		"dangerous": {"classes": {"install": "deny", "local_write": "allow"}, "non_interactive": "allow"}
	}`
	const project = `{"model": "proj-model", "max_iterations": 20, "llm": {"max_attempts": 7}, "tools": {"max_output_bytes": 2000}}`

	type want struct {
		apiKey, baseURL, model string
		maxIter                int
		sources                map[string]string
	}
	tests := []struct {
		name              string
		operator, project string
		environ           []string
		flags             Flags
		want              want
	}{
		{
			name: "operator only", operator: operator,
			want: want{"op-key", "https://op.example/v1", "op-model", 10,
				map[string]string{"api_key": "operator", "base_url": "operator", "model": "operator", "max_iterations": "operator", "llm.max_attempts": "operator"}},
		},
		{
			name: "project over operator", operator: operator, project: project,
			want: want{"op-key", "https://op.example/v1", "proj-model", 20,
				map[string]string{"model": "project", "max_iterations": "project", "llm.max_attempts": "project", "llm.stream": "operator", "tools.max_output_bytes": "project"}},
		},
		{
			name: "env over project", operator: operator, project: project,
			environ: env("ODEK_API_KEY=env-key", "ODEK_BASE_URL=https://env.example/v1", "ODEK_MODEL=env-model"),
			want: want{"env-key", "https://env.example/v1", "env-model", 20,
				map[string]string{"api_key": "env", "base_url": "env", "model": "env", "max_iterations": "project"}},
		},
		{
			name: "flags over env", operator: operator, project: project,
			environ: env("ODEK_BASE_URL=https://env.example/v1", "ODEK_MODEL=env-model"),
			flags:   Flags{Model: "flag-model", BaseURL: "http://localhost:8080/v1", MaxIterations: 3},
			want: want{"op-key", "http://localhost:8080/v1", "flag-model", 3,
				map[string]string{"base_url": "flag", "model": "flag", "max_iterations": "flag"}},
		},
		{
			name: "empty env values are unset", operator: operator,
			environ: env("ODEK_API_KEY=", "ODEK_MODEL=", "ODEK_BASE_URL="),
			want:    want{"op-key", "https://op.example/v1", "op-model", 10, map[string]string{"api_key": "operator", "model": "operator"}},
		},
		{
			name: "explicit zero means default", project: `{"max_iterations": 0, "max_tool_parallel": 0}`,
			want: want{"", "", "", 90, map[string]string{"max_iterations": "project", "max_tool_parallel": "project"}},
		},
		{
			name: "empty strings in files are unset", operator: operator, project: `{"model": "", "system_prompt": ""}`,
			want: want{"op-key", "https://op.example/v1", "op-model", 10, map[string]string{"model": "operator", "system_prompt": "operator"}},
		},
		{
			name: "null in project is unset", operator: operator, project: `{"model": null, "llm": null}`,
			want: want{"op-key", "https://op.example/v1", "op-model", 10, map[string]string{"model": "operator", "llm.max_attempts": "operator"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, tt.operator, tt.project)
			if tt.environ != nil {
				o.Environ = tt.environ
			}
			o.Flags = tt.flags
			c, _ := mustLoad(t, o)
			got := want{c.APIKey, c.BaseURL, c.Model, c.MaxIterations, nil}
			if got.apiKey != tt.want.apiKey || got.baseURL != tt.want.baseURL || got.model != tt.want.model || got.maxIter != tt.want.maxIter {
				t.Errorf("got key=%q base=%q model=%q iter=%d, want key=%q base=%q model=%q iter=%d",
					got.apiKey, got.baseURL, got.model, got.maxIter, tt.want.apiKey, tt.want.baseURL, tt.want.model, tt.want.maxIter)
			}
			for k, v := range tt.want.sources {
				if c.Sources[k] != v {
					t.Errorf("Sources[%q] = %q, want %q", k, c.Sources[k], v)
				}
			}
		})
	}
}

func TestLoadAllOperatorFields(t *testing.T) {
	o := dirs(t, `{
		"system_prompt": "be brief", "max_tool_parallel": 8,
		"llm": {"stream": false, "max_attempts": 5, "idle_timeout_seconds": 30, "request_timeout_seconds": 600},
		"tools": {"shell_timeout_seconds": 120, "max_output_bytes": 1000},
		"dangerous": {"classes": {"install": "deny", "local_write": "allow", "network_egress": "prompt"}, "non_interactive": "allow"}
	}`, "")
	c, _ := mustLoad(t, o)
	if c.SystemPrompt != "be brief" || c.MaxToolParallel != 8 {
		t.Errorf("system_prompt=%q max_tool_parallel=%d", c.SystemPrompt, c.MaxToolParallel)
	}
	if want := (LLM{Stream: false, MaxAttempts: 5, IdleTimeoutSeconds: 30, RequestTimeoutSeconds: 600}); !reflect.DeepEqual(c.LLM, want) {
		t.Errorf("LLM = %+v, want %+v", c.LLM, want)
	}
	if c.LLM.IdleTimeout().Seconds() != 30 || c.LLM.RequestTimeout().Minutes() != 10 || c.Tools.ShellTimeout().Minutes() != 2 {
		t.Errorf("durations: idle %v request %v shell %v", c.LLM.IdleTimeout(), c.LLM.RequestTimeout(), c.Tools.ShellTimeout())
	}
	if want := (Tools{ShellTimeoutSeconds: 120, MaxOutputBytes: 1000}); c.Tools != want {
		t.Errorf("Tools = %+v, want %+v", c.Tools, want)
	}
	wantD := Dangerous{Classes: map[string]Action{"install": ActionDeny, "local_write": ActionAllow, "network_egress": ActionPrompt}, NonInteractive: ActionAllow}
	if !reflect.DeepEqual(c.Dangerous, wantD) {
		t.Errorf("Dangerous = %+v, want %+v", c.Dangerous, wantD)
	}
	if c.Sources["dangerous.classes.install"] != SourceOperator || c.Sources["llm.stream"] != SourceOperator {
		t.Errorf("sources: %v", c.Sources)
	}
}

func TestEnvAPIKeyPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		file    string
		want    string
		source  string
	}{
		{"ODEK over OPENAI", env("OPENAI_API_KEY=openai", "ODEK_API_KEY=odek"), "", "odek", SourceEnv},
		{"OPENAI alone", env("OPENAI_API_KEY=openai"), "", "openai", SourceEnv},
		{"empty ODEK falls back to OPENAI", env("ODEK_API_KEY=", "OPENAI_API_KEY=openai"), "", "openai", SourceEnv},
		{"OPENAI over operator file", env("OPENAI_API_KEY=openai"), `{"api_key":"file"}`, "openai", SourceEnv},
		{"operator file when env empty", env("ODEK_API_KEY=", "OPENAI_API_KEY="), `{"api_key":"file"}`, "file", SourceOperator},
		{"first duplicate wins like os.Getenv", env("ODEK_API_KEY=first", "ODEK_API_KEY=second"), "", "first", SourceEnv},
		{"none", env("HOME=/nonexistent"), "", "", SourceDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, tt.file, "")
			o.Environ = tt.environ
			c, _ := mustLoad(t, o)
			if c.APIKey != tt.want || c.Sources["api_key"] != tt.source {
				t.Errorf("APIKey = %q from %q, want %q from %q", c.APIKey, c.Sources["api_key"], tt.want, tt.source)
			}
		})
	}
}

func TestProjectTrustRules(t *testing.T) {
	const operator = `{"api_key":"op-key","base_url":"https://op.example/v1","dangerous":{"classes":{"install":"deny"},"non_interactive":"deny"}}`
	tests := []struct {
		name       string
		project    string
		wantFields []string // fields warned about, in order
	}{
		{"api_key", `{"api_key":"evil"}`, []string{"api_key"}},
		{"base_url", `{"base_url":"https://evil.example/v1"}`, []string{"base_url"}},
		{"dangerous", `{"dangerous":{"classes":{"install":"allow"},"non_interactive":"allow"}}`, []string{"dangerous"}},
		{"all three", `{"api_key":"k","base_url":"https://evil.example","dangerous":{}}`, []string{"api_key", "base_url", "dangerous"}},
		{"case variants match too", `{"API_KEY":"k","Base_URL":"https://evil.example","DANGEROUS":{"non_interactive":"allow"}}`, []string{"api_key", "base_url", "dangerous"}},
		{"wrong types are ignored not errors", `{"api_key":5,"base_url":[1],"dangerous":"allow"}`, []string{"api_key", "base_url", "dangerous"}},
		{"null is silent", `{"api_key":null,"base_url":null,"dangerous":null}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, operator, tt.project)
			projPath := filepath.Join(o.ProjectDir, ProjectFileName)
			writeFile(t, projPath, tt.project, 0o600) // no permission warning
			c, warns := mustLoad(t, o)
			if c.APIKey != "op-key" || c.BaseURL != "https://op.example/v1" {
				t.Errorf("project changed endpoint: key=%q base=%q", c.APIKey, c.BaseURL)
			}
			wantD := Dangerous{Classes: map[string]Action{"install": ActionDeny}, NonInteractive: ActionDeny}
			if !reflect.DeepEqual(c.Dangerous, wantD) {
				t.Errorf("project changed danger policy: %+v", c.Dangerous)
			}
			var got []string
			for _, w := range warns {
				if w.Source != projPath {
					t.Errorf("warning source %q, want %q", w.Source, projPath)
				}
				if !strings.Contains(w.Message, "ignored") {
					t.Errorf("warning %q does not say ignored", w)
				}
				if strings.Contains(w.String(), "evil") {
					t.Errorf("warning repeats the project value: %q", w)
				}
				got = append(got, w.Field)
			}
			if !reflect.DeepEqual(got, tt.wantFields) {
				t.Errorf("warned fields = %v, want %v", got, tt.wantFields)
			}
		})
	}
}

func TestUnknownFieldsIgnored(t *testing.T) {
	const extra = `{
		"mcp_servers": {"x": {"command": "/bin/x", "timeout_seconds": "weird"}},
		"telegram": [1, 2], "subagent": null, "future_section": 128000,
		"// model": "a note", "model": "m",
		"llm": {"stream": false, "future_knob": {"a": [1]}},
		"dangerous": {"classes": {}, "future": true}
	}`
	c, w := mustLoad(t, dirs(t, extra, extra))
	if c.Model != "m" || c.LLM.Stream {
		t.Errorf("model=%q stream=%v", c.Model, c.LLM.Stream)
	}
	if len(w) != 1 || w[0].Field != "dangerous" { // the project's dangerous key only
		t.Errorf("warnings = %v", w)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name       string
		operator   string
		project    string
		inProject  bool
		field      string
		line, col  int
		sentinel   error
		reasonPart string
	}{
		{name: "syntax error has line and column", operator: "{\n  \"model\": \"m\",\n  \"max_iterations\": 10,,\n}",
			line: 3, col: 24, sentinel: ErrSyntax, reasonPart: "invalid character"},
		{name: "truncated", project: `{"model": "m"`, inProject: true, line: 1, sentinel: ErrSyntax, reasonPart: "end of JSON"},
		{name: "trailing data", project: "{}\nxyz", inProject: true, line: 2, col: 1, sentinel: ErrSyntax},
		{name: "empty file", project: "  \n", inProject: true, sentinel: ErrSyntax, reasonPart: "empty"},
		{name: "top level array", operator: "\n [1]", line: 2, col: 2, sentinel: ErrSyntax, reasonPart: "JSON object"},
		{name: "wrong type nested", operator: "{\"llm\": {\n \"max_attempts\": \"three\"}}", field: "llm.max_attempts", line: 2, sentinel: ErrInvalid, reasonPart: "want an integer"},
		{name: "wrong type in project", project: `{"llm": {"stream": "yes"}}`, inProject: true, field: "llm.stream", sentinel: ErrInvalid, reasonPart: "true or false"},
		{name: "section not an object", project: `{"tools": 3}`, inProject: true, field: "tools", sentinel: ErrInvalid},
		{name: "float for int", operator: `{"max_iterations": 1.5}`, field: "max_iterations", sentinel: ErrInvalid},
		{name: "negative", operator: `{"max_iterations": -1}`, field: "max_iterations", sentinel: ErrInvalid, reasonPart: "got -1"},
		{name: "negative in project", project: `{"tools": {"max_output_bytes": -5}}`, inProject: true, field: "tools.max_output_bytes", sentinel: ErrInvalid},
		{name: "seconds over limit", project: `{"llm": {"request_timeout_seconds": 86401}}`, inProject: true, field: "llm.request_timeout_seconds", sentinel: ErrInvalid, reasonPart: "MaxSeconds=86400"},
		{name: "invalid action", operator: `{"dangerous": {"classes": {"install": "maybe"}}}`, field: "dangerous.classes.install", sentinel: ErrInvalid, reasonPart: `"maybe"`},
		{name: "action case matters", operator: `{"dangerous": {"classes": {"install": "Allow"}}}`, field: "dangerous.classes.install", sentinel: ErrInvalid},
		{name: "prompt not allowed non-interactive", operator: `{"dangerous": {"non_interactive": "prompt"}}`, field: "dangerous.non_interactive", sentinel: ErrInvalid},
		{name: "bad class name", operator: `{"dangerous": {"classes": {"Install!": "deny"}}}`, field: "dangerous.classes.Install!", sentinel: ErrInvalid},
		{name: "action wrong type", operator: `{"dangerous": {"classes": {"install": true}}}`, field: "dangerous.classes", sentinel: ErrInvalid},
		{name: "base_url scheme", operator: `{"base_url": "ftp://x.example"}`, field: "base_url", sentinel: ErrInvalid, reasonPart: "http"},
		{name: "base_url relative", operator: `{"base_url": "api.example.com/v1"}`, field: "base_url", sentinel: ErrInvalid},
		{name: "api_key wrong type hides value", operator: `{"api_key": 123456789}`, field: "api_key", sentinel: ErrInvalid, reasonPart: "got a JSON number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, tt.operator, tt.project)
			path := filepath.Join(o.Home, OperatorFileName)
			if tt.inProject {
				path = filepath.Join(o.ProjectDir, ProjectFileName)
			}
			c, _, err := Load(o)
			if err == nil {
				t.Fatalf("Load succeeded: %v", c)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v is not %v", err, tt.sentinel)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Source != path {
				t.Errorf("Source = %q, want %q", e.Source, path)
			}
			if e.Field != tt.field {
				t.Errorf("Field = %q, want %q", e.Field, tt.field)
			}
			if tt.line != 0 && e.Line != tt.line {
				t.Errorf("Line = %d, want %d (%v)", e.Line, tt.line, err)
			}
			if tt.col != 0 && e.Column != tt.col {
				t.Errorf("Column = %d, want %d (%v)", e.Column, tt.col, err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.reasonPart) {
				t.Errorf("error %q lacks path or %q", err, tt.reasonPart)
			}
			if strings.Contains(err.Error(), "123456789") {
				t.Errorf("error leaks the value: %q", err)
			}
		})
	}
}

func TestEnvAndFlagErrors(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		flags   Flags
		source  string
		field   string
	}{
		{"bad env base url", env("ODEK_BASE_URL=user:secret@host"), Flags{}, "environment variable ODEK_BASE_URL", "base_url"},
		{"bad flag base url", env(), Flags{BaseURL: "nope"}, "flags", "base_url"},
		{"negative flag", env(), Flags{MaxIterations: -2}, "flags", "max_iterations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, "", "")
			o.Environ, o.Flags = tt.environ, tt.flags
			_, _, err := Load(o)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want *Error wrapping ErrInvalid", err)
			}
			if e.Source != tt.source || e.Field != tt.field {
				t.Errorf("Source/Field = %q/%q, want %q/%q", e.Source, e.Field, tt.source, tt.field)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks URL credentials: %v", err)
			}
		})
	}
}

func TestFileProblems(t *testing.T) {
	t.Run("directory in place of file", func(t *testing.T) {
		o := dirs(t, "", "")
		if err := os.Mkdir(filepath.Join(o.ProjectDir, ProjectFileName), 0o700); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "regular file") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		o := dirs(t, "", "")
		big := `{"x":"` + strings.Repeat("a", MaxFileBytes) + `"}`
		writeFile(t, filepath.Join(o.ProjectDir, ProjectFileName), big, 0o600)
		_, _, err := Load(o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprint(MaxFileBytes)) || !strings.Contains(err.Error(), fmt.Sprint(len(big))) {
			t.Errorf("err = %v, want limit and observed size", err)
		}
	})
	t.Run("byte order mark accepted", func(t *testing.T) {
		o := dirs(t, "\xef\xbb\xbf{\"model\":\"bom\"}", "")
		c, _ := mustLoad(t, o)
		if c.Model != "bom" || c.Layers.Operator.Raw[0] != '{' {
			t.Errorf("model %q raw %q", c.Model, c.Layers.Operator.Raw)
		}
	})
	t.Run("symlinked file followed", func(t *testing.T) {
		o := dirs(t, "", "")
		target := filepath.Join(t.TempDir(), "real.json")
		writeFile(t, target, `{"model":"linked"}`, 0o600)
		if err := os.Symlink(target, filepath.Join(o.ProjectDir, ProjectFileName)); err != nil {
			t.Skip("symlinks unsupported:", err)
		}
		c, _ := mustLoad(t, o)
		if c.Model != "linked" {
			t.Errorf("model %q", c.Model)
		}
	})
}

func TestPermissionWarning(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		warn    bool
	}{
		{"key world readable", `{"api_key":"k"}`, 0o644, true},
		{"key group readable", `{"api_key":"k"}`, 0o640, true},
		{"key private", `{"api_key":"k"}`, 0o600, false},
		{"no key", `{"model":"m"}`, 0o644, false},
		{"empty key", `{"api_key":""}`, 0o644, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, "", "")
			path := filepath.Join(o.Home, OperatorFileName)
			writeFile(t, path, tt.content, tt.mode)
			_, warns := mustLoad(t, o)
			var got bool
			for _, w := range warns {
				if strings.Contains(w.Message, "chmod 600") && w.Source == path {
					got = true
				}
				if strings.Contains(w.String(), `"k"`) {
					t.Errorf("warning leaks key: %v", w)
				}
			}
			if got != tt.warn {
				t.Errorf("permission warning = %v, want %v (%v)", got, tt.warn, warns)
			}
		})
	}
	t.Run("project file with key", func(t *testing.T) {
		o := dirs(t, "", `{"api_key":"leaked"}`) // written 0644
		_, warns := mustLoad(t, o)
		if len(warns) != 1 || warns[0].Field != "api_key" || !strings.Contains(warns[0].Message, "remove it") ||
			!strings.Contains(warns[0].Message, "mode 0644") || strings.Contains(warns[0].String(), "leaked") {
			t.Errorf("warnings = %v", warns)
		}
	})
}

func TestTransportWarning(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		warn    bool
	}{
		{"http remote with key", env("ODEK_API_KEY=k", "ODEK_BASE_URL=http://llm.example/v1"), true},
		{"https remote with key", env("ODEK_API_KEY=k", "ODEK_BASE_URL=https://llm.example/v1"), false},
		{"http loopback with key", env("ODEK_API_KEY=k", "ODEK_BASE_URL=http://127.0.0.1:8080/v1"), false},
		{"http remote without key", env("ODEK_BASE_URL=http://llm.example/v1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, "", "")
			o.Environ = tt.environ
			_, warns := mustLoad(t, o)
			if got := len(warns) == 1 && warns[0].Field == "base_url" && warns[0].Source == "environment"; got != tt.warn {
				t.Errorf("warning = %v, want %v", warns, tt.warn)
			}
		})
	}
}

func TestSection(t *testing.T) {
	type server struct {
		Command        string   `json:"command"`
		Args           []string `json:"args"`
		TimeoutSeconds int      `json:"timeout_seconds"`
	}
	raw := "{\n \"mcp_servers\": {\"a\": {\"command\": \"/bin/a\", \"extra\": 1}},\n \"other\": {\"max_tool_calls\": \"x\"},\n \"Plugin\": {\"depth\": 2}, \"nothing\": null\n}"
	o := dirs(t, raw, "")
	c, _ := mustLoad(t, o)
	l := c.Layers.Operator
	if !l.Exists() || l.Path != filepath.Join(o.Home, OperatorFileName) {
		t.Fatalf("operator layer = %v", l)
	}

	var servers map[string]server
	if ok, err := l.Section("mcp_servers", &servers); !ok || err != nil {
		t.Fatalf("mcp_servers: ok=%v err=%v", ok, err)
	}
	if servers["a"].Command != "/bin/a" {
		t.Errorf("servers = %+v", servers)
	}

	var limits struct {
		MaxToolCalls int `json:"max_tool_calls"`
	}
	ok, err := l.Section("other", &limits)
	var e *Error
	if !ok || !errors.As(err, &e) || e.Field != "other.max_tool_calls" || e.Line != 3 || e.Source != l.Path {
		t.Errorf("limits: ok=%v err=%v", ok, err)
	}

	sub := struct {
		Depth   int `json:"depth"`
		Timeout int `json:"timeout"`
	}{Timeout: 60}
	if ok, err := l.Section("plugin", &sub); !ok || err != nil || sub.Depth != 2 || sub.Timeout != 60 {
		t.Errorf("plugin (case-insensitive, defaults kept): ok=%v err=%v %+v", ok, err, sub)
	}

	keep := 7
	for _, key := range []string{"absent", "nothing"} {
		if ok, err := l.Section(key, &keep); ok || err != nil || keep != 7 {
			t.Errorf("%s: ok=%v err=%v keep=%d", key, ok, err, keep)
		}
	}
	if ok, err := c.Layers.Project.Section("mcp_servers", &servers); ok || err != nil {
		t.Errorf("absent project: ok=%v err=%v", ok, err)
	}
	for _, bad := range []string{"", `a"b`, "a,omitempty", strings.Repeat("k", 129)} {
		if _, err := l.Section(bad, &keep); !errors.Is(err, ErrInvalid) {
			t.Errorf("key %q: err = %v", bad, err)
		}
	}
	if _, err := l.Section("limits", limits); !errors.Is(err, ErrInvalid) {
		t.Errorf("non-pointer: err = %v", err)
	}
}

func TestRedaction(t *testing.T) {
	o := dirs(t, `{"api_key":"sk-supersecret","model":"m"}`, "")
	c, _ := mustLoad(t, o)
	if c.APIKey != "sk-supersecret" {
		t.Fatalf("APIKey = %q", c.APIKey)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		//lint:ignore S1025 the test checks what each formatting verb prints
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", *c), "%#v": fmt.Sprintf("%#v", *c), "%s": fmt.Sprintf("%s", c),
		"json": string(js), "layers": fmt.Sprintf("%v %+v %#v", c.Layers, c.Layers.Operator, c.Layers.Operator),
	}
	for name, out := range outputs {
		if strings.Contains(out, "supersecret") {
			t.Errorf("%s leaks the key: %s", name, out)
		}
	}
	if !strings.Contains(outputs["%v"], `api_key="[redacted]"`) || !strings.Contains(outputs["json"], `"api_key":"[redacted]"`) {
		t.Errorf("redaction marker missing: %s / %s", outputs["%v"], outputs["json"])
	}
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil || back["model"] != "m" {
		t.Errorf("json round trip: %v %v", back, err)
	}
	if c.APIKey != "sk-supersecret" {
		t.Errorf("marshalling mutated the config")
	}
}

func TestSettings(t *testing.T) {
	o := dirs(t, `{"api_key":"k","dangerous":{"classes":{"install":"deny","destructive":"prompt"}}}`, "")
	o.Environ = env("ODEK_MODEL=env-model")
	c, _ := mustLoad(t, o)
	got := map[string]Setting{}
	var keys []string
	for _, s := range c.Settings() {
		got[s.Key] = s
		keys = append(keys, s.Key)
	}
	checks := []Setting{
		{"api_key", "[redacted]", SourceOperator},
		{"model", "env-model", SourceEnv},
		{"max_iterations", "90", SourceDefault},
		{"dangerous.classes.destructive", "prompt", SourceOperator},
		{"llm.stream", "true", SourceDefault},
		{"tools.max_output_bytes", "65536", SourceDefault},
	}
	for _, w := range checks {
		if got[w.Key] != w {
			t.Errorf("setting %q = %+v, want %+v", w.Key, got[w.Key], w)
		}
	}
	if i, j := indexOf(keys, "dangerous.classes.destructive"), indexOf(keys, "dangerous.classes.install"); i < 0 || i > j {
		t.Errorf("classes not sorted: %v", keys)
	}
	var zero Config
	if s := zero.Settings(); len(s) == 0 || s[0].Value != "" {
		t.Errorf("zero config settings: %v", s)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestPosition(t *testing.T) {
	data := []byte("ab\ncd\n\nef")
	tests := []struct {
		offset    int64
		line, col int
	}{
		{0, 1, 1}, {1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {4, 2, 1}, {5, 2, 2}, {7, 3, 1}, {9, 4, 2}, {99, 4, 2},
	}
	for _, tt := range tests {
		if l, c := position(data, tt.offset); l != tt.line || c != tt.col {
			t.Errorf("position(%d) = %d:%d, want %d:%d", tt.offset, l, c, tt.line, tt.col)
		}
	}
	if l, c := position(nil, 5); l != 1 || c != 1 {
		t.Errorf("position(nil) = %d:%d", l, c)
	}
}

func TestErrorAndWarningText(t *testing.T) {
	e := &Error{Source: "/h/config.json", Field: "llm.max_attempts", Line: 3, Column: 7, Reason: "must be >= 0, got -1", Err: ErrInvalid}
	if want := `config: /h/config.json:3:7: field "llm.max_attempts": must be >= 0, got -1`; e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	e = &Error{Source: "flags", Reason: "x", Err: ErrInvalid}
	if e.Error() != "config: flags: x" || !errors.Is(e, ErrInvalid) {
		t.Errorf("Error() = %q", e.Error())
	}
	w := Warning{Source: "/p/odek.json", Field: "api_key", Message: "ignored"}
	if w.String() != `config: /p/odek.json: field "api_key": ignored` {
		t.Errorf("Warning = %q", w.String())
	}
	if (Warning{Source: "s", Message: "m"}).String() != "config: s: m" {
		t.Errorf("fieldless warning text")
	}
}

func BenchmarkLoad(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, OperatorFileName), StarterJSON(), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ProjectFileName), []byte(`{"model":"m","llm":{"max_attempts":3}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	o := Options{Home: root, ProjectDir: root, Environ: env("ODEK_API_KEY=k")}
	for b.Loop() {
		if _, _, err := Load(o); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSectionsAbsentFalseNull: the llm, tools and dangerous sections
// decode into Config's own types over the layers below (no pointer copy):
// an absent key keeps the value below it, false and 0 replace it, null is
// absent, and a key a file sets is that file's in Sources even when the
// value is unchanged.
func TestSectionsAbsentFalseNull(t *testing.T) {
	const operator = `{
		"llm": {"stream": false, "strict_tool_models": ["m1"], "keep_think_tags": true, "max_attempts": 4},
		"tools": {"shell_timeout_seconds": 60},
		"dangerous": {"classes": {"install": "deny"}}
	}`
	tests := []struct {
		name, project string
		check         func(t *testing.T, c *Config)
	}{
		{"absent keeps the operator's", `{"llm": {}}`, func(t *testing.T, c *Config) {
			if c.LLM.Stream || !c.LLM.KeepThinkTags || c.LLM.MaxAttempts != 4 || !slices.Equal(c.LLM.StrictToolModels, []string{"m1"}) {
				t.Errorf("llm = %+v", c.LLM)
			}
			if c.Sources["llm.stream"] != SourceOperator || c.Sources["llm.keep_think_tags"] != SourceOperator {
				t.Errorf("sources %v", c.Sources)
			}
		}},
		{"false and 0 replace", `{"llm": {"keep_think_tags": false, "max_attempts": 0, "stream": true}, "tools": {"shell_timeout_seconds": 0}}`, func(t *testing.T, c *Config) {
			if !c.LLM.Stream || c.LLM.KeepThinkTags || c.LLM.MaxAttempts != 0 || c.Tools.ShellTimeoutSeconds != 0 {
				t.Errorf("llm = %+v tools = %+v", c.LLM, c.Tools)
			}
			for _, k := range []string{"llm.keep_think_tags", "llm.max_attempts", "llm.stream", "tools.shell_timeout_seconds"} {
				if c.Sources[k] != SourceProject {
					t.Errorf("Sources[%q] = %q, want project", k, c.Sources[k])
				}
			}
		}},
		{"null is absent", `{"llm": {"strict_tool_models": null, "keep_think_tags": null}}`, func(t *testing.T, c *Config) {
			if !slices.Equal(c.LLM.StrictToolModels, []string{"m1"}) || !c.LLM.KeepThinkTags {
				t.Errorf("llm = %+v", c.LLM)
			}
			if c.Sources["llm.strict_tool_models"] != SourceOperator {
				t.Errorf("Sources[llm.strict_tool_models] = %q", c.Sources["llm.strict_tool_models"])
			}
		}},
		{"the same value is still the project's", `{"llm": {"stream": false}}`, func(t *testing.T, c *Config) {
			if c.LLM.Stream || c.Sources["llm.stream"] != SourceProject {
				t.Errorf("stream %v from %q", c.LLM.Stream, c.Sources["llm.stream"])
			}
		}},
		{"a project's dangerous is not read", `{"dangerous": {"classes": {"install": "allow"}, "non_interactive": "allow"}}`, func(t *testing.T, c *Config) {
			if c.Dangerous.Classes["install"] != ActionDeny || c.Dangerous.NonInteractive != ActionDeny {
				t.Errorf("dangerous = %+v", c.Dangerous)
			}
			if c.Sources["dangerous.classes.install"] != SourceOperator || c.Sources["dangerous.non_interactive"] != SourceDefault {
				t.Errorf("sources %v", c.Sources)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := mustLoad(t, dirs(t, operator, tt.project))
			tt.check(t, c)
		})
	}
	t.Run("operator errors", func(t *testing.T) {
		for _, bad := range []struct{ file, field string }{
			{`{"dangerous": {"non_interactive": ""}}`, "dangerous.non_interactive"},
			{`{"dangerous": {"classes": {"Bad": "deny"}}}`, "dangerous.classes.Bad"},
			{`{"llm": {"idle_timeout_seconds": -1}}`, "llm.idle_timeout_seconds"},
		} {
			_, _, err := Load(dirs(t, bad.file, ""))
			var ce *Error
			if !errors.As(err, &ce) || ce.Field != bad.field {
				t.Errorf("%s: err %v, want a field %q error", bad.file, err, bad.field)
			}
		}
	})
	t.Run("no classes is nil", func(t *testing.T) {
		c, _ := mustLoad(t, dirs(t, `{"dangerous": {"classes": {}}}`, ""))
		if c.Dangerous.Classes != nil {
			t.Errorf("classes %#v, want nil", c.Dangerous.Classes)
		}
	})
}
