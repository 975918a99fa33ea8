package ext

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient"
)

func TestParseServer(t *testing.T) {
	const opFile = "/home/u/.odek/config.json"
	const prFile = "/src/proj/odek.json"
	tests := []struct {
		name    string
		src     Source
		server  string
		raw     string
		errHas  string // "" ⇒ no Err
		warnHas []string
		check   func(t *testing.T, s ServerSpec)
	}{
		{
			name: "defaults", src: SourceOperator, server: "fs", raw: `{"command":"fs-mcp"}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.Timeout != 30*time.Second || s.MaxResponseBytes != 10<<20 || s.MaxResultChars != 200000 ||
					s.StartupTimeout != 10*time.Second || !s.Enabled || s.Required || s.AutoApprove ||
					s.DangerClass != DefaultDangerClass || len(s.ArtifactRoots) != 0 || s.Command != "fs-mcp" {
					t.Fatalf("defaults wrong: %+v", s)
				}
			},
		},
		{
			name: "explicit zero means default", src: SourceOperator, server: "fs",
			raw: `{"command":"x","timeout_seconds":0,"max_response_bytes":0,"max_result_chars":0,"startup_timeout_seconds":0}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.Timeout != 30*time.Second || s.MaxResponseBytes != 10<<20 || s.MaxResultChars != 200000 || s.StartupTimeout != 10*time.Second {
					t.Fatalf("zero not default: %+v", s)
				}
			},
		},
		{
			name: "all fields", src: SourceOperator, server: "log-analyzer",
			raw: `{"command":"/usr/local/bin/la","args":["--serve"],"env":{"LOG_LEVEL":"info"},"timeout_seconds":120,
				"max_response_bytes":2097152,"max_result_chars":100000,"artifact_roots":["/var/ci","rel/dir"],
				"enabled":true,"required":true,"auto_approve":true,"startup_timeout_seconds":5,"danger_class":"network_egress"}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.Timeout != 120*time.Second || s.MaxResponseBytes != 2097152 || s.MaxResultChars != 100000 ||
					s.StartupTimeout != 5*time.Second || !s.Required || !s.AutoApprove || s.DangerClass != tools.ClassNetworkEgress ||
					s.Env["LOG_LEVEL"] != "info" || len(s.Args) != 1 {
					t.Fatalf("fields wrong: %+v", s)
				}
				if s.ArtifactRoots[0] != "/var/ci" || s.ArtifactRoots[1] != "/home/u/.odek/rel/dir" {
					t.Fatalf("roots %v", s.ArtifactRoots)
				}
			},
		},
		{
			name: "clamps warn naming the server", src: SourceOperator, server: "big",
			raw:     `{"command":"x","timeout_seconds":99999,"max_result_chars":5000000,"startup_timeout_seconds":100000}`,
			warnHas: []string{`"big": timeout_seconds=99999 clamped to 3600`, `"big": max_result_chars=5000000 clamped to 1000000`, `"big": startup_timeout_seconds=100000 clamped to 3600`},
			check: func(t *testing.T, s ServerSpec) {
				if s.Timeout != time.Hour || s.MaxResultChars != 1000000 || s.StartupTimeout != time.Hour {
					t.Fatalf("not clamped: %+v", s)
				}
			},
		},
		{
			name: "huge timeout does not overflow", src: SourceOperator, server: "big",
			raw:     `{"command":"x","timeout_seconds":9223372036854775807}`,
			warnHas: []string{"clamped to 3600"},
			check: func(t *testing.T, s ServerSpec) {
				if s.Timeout != time.Hour {
					t.Fatalf("timeout %v", s.Timeout)
				}
			},
		},
		{name: "max_response_bytes above ceiling", src: SourceOperator, server: "s", raw: `{"command":"x","max_response_bytes":67108865}`, errHas: "max_response_bytes=67108865 exceeds the ceiling of 67108864 (64 MiB); the server is not started"},
		{
			name: "max_response_bytes at ceiling", src: SourceOperator, server: "s", raw: `{"command":"x","max_response_bytes":67108864}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.MaxResponseBytes != mcpclient.MaxResponseBytesCeiling {
					t.Fatal(s.MaxResponseBytes)
				}
			},
		},
		{name: "negative timeout", src: SourceOperator, server: "s", raw: `{"command":"x","timeout_seconds":-1}`, errHas: "timeout_seconds=-1 is negative"},
		{name: "negative response bytes", src: SourceOperator, server: "s", raw: `{"command":"x","max_response_bytes":-5}`, errHas: "max_response_bytes=-5 is negative"},
		{name: "negative result chars", src: SourceOperator, server: "s", raw: `{"command":"x","max_result_chars":-5}`, errHas: "max_result_chars=-5 is negative"},
		{name: "negative startup", src: SourceOperator, server: "s", raw: `{"command":"x","startup_timeout_seconds":-3}`, errHas: "startup_timeout_seconds=-3 is negative"},
		{name: "missing command", src: SourceOperator, server: "s", raw: `{"args":["a"]}`, errHas: "command (or url) is required"},
		{name: "blank command", src: SourceOperator, server: "s", raw: `{"command":"  "}`, errHas: "command (or url) is required"},
		{name: "wrong type", src: SourceOperator, server: "s", raw: `{"command":"x","timeout_seconds":"30"}`, errHas: `field "timeout_seconds": got a JSON string`},
		{name: "fraction", src: SourceOperator, server: "s", raw: `{"command":"x","timeout_seconds":1.5}`, errHas: "timeout_seconds"},
		{name: "not an object", src: SourceOperator, server: "s", raw: `"fs-mcp"`, errHas: "got a JSON string"},
		{name: "invalid server name", src: SourceOperator, server: "a__b", raw: `{"command":"x"}`, errHas: "server name"},
		{name: "server name with dot", src: SourceOperator, server: "a.b", raw: `{"command":"x"}`, errHas: "outside [A-Za-z0-9_-]"},
		{name: "bad danger class", src: SourceOperator, server: "s", raw: `{"command":"x","danger_class":"harmless"}`, errHas: `danger_class="harmless" is not a danger class`},
		{name: "bad scope", src: SourceOperator, server: "s", raw: `{"command":"x","scope":"chat"}`, errHas: `scope "chat": want "shared" or "job"`},
		{
			name: "scope job", src: SourceProject, server: "s", raw: `{"command":"/bin/x","scope":"job"}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.Scope != ScopeJob {
					t.Fatalf("scope %q", s.Scope)
				}
			},
		},
		{
			name: "scope defaults to shared", src: SourceOperator, server: "s", raw: `{"command":"x"}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.Scope != ScopeShared {
					t.Fatalf("scope %q", s.Scope)
				}
			},
		},
		{
			name: "unknown fields ignored", src: SourceOperator, server: "s", raw: `{"command":"x","future":{"a":[1]},"transport":"stdio"}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.Err != nil || len(s.Warnings) != 0 {
					t.Fatalf("unknown fields not ignored: %+v", s)
				}
			},
		},
		{
			name: "disabled", src: SourceOperator, server: "s", raw: `{"command":"x","enabled":false}`,
			check: func(t *testing.T, s ServerSpec) {
				if s.Enabled {
					t.Fatal("enabled")
				}
			},
		},
		{
			name: "project auto_approve stripped", src: SourceProject, server: "p", raw: `{"command":"./srv","auto_approve":true,"danger_class":"safe"}`,
			warnHas: []string{`"p": auto_approve is ignored in the project file /src/proj/odek.json`, `"p": danger_class is ignored`},
			check: func(t *testing.T, s ServerSpec) {
				if s.AutoApprove || s.DangerClass != DefaultDangerClass {
					t.Fatalf("project trust fields kept: %+v", s)
				}
				if s.Command != "/src/proj/srv" {
					t.Fatalf("relative command not resolved: %q", s.Command)
				}
			},
		},
		{
			name: "broken entry keeps required", src: SourceOperator, server: "s", raw: `{"command":"x","required":true,"args":"oops"}`,
			errHas: `field "args"`,
			check: func(t *testing.T, s ServerSpec) {
				if !s.Required {
					t.Fatal("required lost")
				}
			},
		},
		{name: "too many args", src: SourceOperator, server: "s", raw: `{"command":"x","args":[` + strings.Repeat(`"a",`, MaxArgs) + `"a"]}`, errHas: "args has 1025 entries"},
		{name: "NUL in arg", src: SourceOperator, server: "s", raw: `{"command":"x","args":["a\u0000b"]}`, errHas: "NUL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := opFile
			if tc.src == SourceProject {
				file = prFile
			}
			s := parseServer(tc.src, file, tc.server, json.RawMessage(tc.raw))
			if tc.errHas == "" && s.Err != nil {
				t.Fatalf("unexpected error: %v", s.Err)
			}
			if tc.errHas != "" {
				if s.Err == nil || !strings.Contains(s.Err.Error(), tc.errHas) || !errors.Is(s.Err, ErrConfig) {
					t.Fatalf("error %v, want ErrConfig containing %q", s.Err, tc.errHas)
				}
				if !strings.Contains(s.Err.Error(), `"`+tc.server+`"`) {
					t.Fatalf("error does not name the server: %v", s.Err)
				}
			}
			all := strings.Join(s.Warnings, "\n")
			for _, w := range tc.warnHas {
				if !strings.Contains(all, w) {
					t.Fatalf("warnings %q lack %q", all, w)
				}
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestParseConfigSections(t *testing.T) {
	op := Section{Path: "/h/config.json", Raw: json.RawMessage(`{"b":{"command":"x"},"shared":{"command":"op-cmd"}}`)}
	pr := Section{Path: "/p/odek.json", Raw: json.RawMessage(`{"a":{"command":"y"},"shared":{"command":"evil"}}`)}
	specs, warns, err := ParseConfig(op, pr)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name+":"+string(s.Source))
		if s.Name == "shared" && s.Command != "op-cmd" {
			t.Fatalf("project overrode the operator's server: %+v", s)
		}
	}
	if got := strings.Join(names, ","); got != "a:project,b:operator,shared:operator" {
		t.Fatalf("specs %s", got)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], `"shared" is declared in both`) {
		t.Fatalf("warnings %q", warns)
	}

	for _, bad := range []string{`[]`, `"x"`, `42`, `{"a":1`} {
		if _, _, err := ParseConfig(Section{Path: "/h/config.json", Raw: json.RawMessage(bad)}, Section{}); !errors.Is(err, ErrConfig) {
			t.Errorf("section %s: err %v, want ErrConfig", bad, err)
		}
	}
	var many strings.Builder
	many.WriteString("{")
	for i := range MaxServers + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"s` + strings.Repeat("x", i) + `":{"command":"c"}`)
	}
	many.WriteString("}")
	if _, _, err := ParseConfig(Section{Raw: json.RawMessage(many.String())}, Section{}); err == nil || !strings.Contains(err.Error(), "limit 64") {
		t.Fatalf("too many servers: %v", err)
	}
	for _, empty := range []string{"", "null", "  null "} {
		specs, _, err := ParseConfig(Section{Raw: json.RawMessage(empty)}, Section{})
		if err != nil || len(specs) != 0 {
			t.Fatalf("empty section %q: %v %v", empty, specs, err)
		}
	}
}

func TestRelativePathWithoutFile(t *testing.T) {
	s := parseServer(SourceOperator, "", "s", json.RawMessage(`{"command":"./srv"}`))
	if s.Err == nil || !strings.Contains(s.Err.Error(), "needs a declaring file") {
		t.Fatalf("err %v", s.Err)
	}
	s = parseServer(SourceOperator, "", "s", json.RawMessage(`{"command":"srv","artifact_roots":["rel"]}`))
	if s.Err == nil || !strings.Contains(s.Err.Error(), "artifact_roots[0]") {
		t.Fatalf("err %v", s.Err)
	}
}

func TestClientConfigStripsSecrets(t *testing.T) {
	s := parseServer(SourceOperator, "/h/config.json", "s", json.RawMessage(`{"command":"x","env":{
		"LOG_LEVEL":"info","GITHUB_TOKEN":"ghp_supersecretvalue","db-password":"hunter2","apiKey":"k","PLAIN":"1"}}`))
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	cfg, warns, err := s.ClientConfig([]string{"PATH=/bin", "HOME=/h", "AWS_SECRET_ACCESS_KEY=zzz", "OTHER=1", "LC_ALL=C"}, "/work")
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(cfg.Env, "\n")
	for _, want := range []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "LOG_LEVEL=info", "PLAIN=1"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s: %q", want, env)
		}
	}
	for _, bad := range []string{"GITHUB_TOKEN", "db-password", "apiKey", "AWS_SECRET", "OTHER", "supersecret", "hunter2"} {
		if strings.Contains(env, bad) {
			t.Errorf("env has %s: %q", bad, env)
		}
	}
	all := strings.Join(warns, "\n")
	for _, k := range []string{"GITHUB_TOKEN", "db-password", "apiKey"} {
		if !strings.Contains(all, `env key "`+k+`"`) {
			t.Errorf("no warning naming %s: %q", k, all)
		}
	}
	if strings.Contains(all, "supersecret") || strings.Contains(all, "hunter2") || strings.Contains(all, "AWS_SECRET") {
		t.Errorf("warnings leak values or base env: %q", all)
	}
	if cfg.Dir != "/work" || cfg.Timeout != 30*time.Second || cfg.Name != "s" {
		t.Fatalf("cfg %+v", cfg)
	}
}

func TestRemoteServerConfig(t *testing.T) {
	base := []string{"GITHUB_TOKEN=ghp_secretvalue", "PATH=/bin"}
	t.Run("operator headers resolve ${ENV}", func(t *testing.T) {
		s := parseServer(SourceOperator, "/h/config.json", "gh", json.RawMessage(`{"url":"https://mcp.example.com/mcp?x=1",
			"headers":{"Authorization":"Bearer ${GITHUB_TOKEN}","X-Static":"v"},"protocol_version":"2025-06-18","timeout_seconds":5}`))
		if s.Err != nil {
			t.Fatal(s.Err)
		}
		cfg, _, err := s.ClientConfig(base, "/work")
		if err != nil || cfg.URL != "https://mcp.example.com/mcp?x=1" || cfg.Command != "" || cfg.Headers["Authorization"] != "Bearer ghp_secretvalue" ||
			cfg.Headers["X-Static"] != "v" || cfg.ProtocolVersion != "2025-06-18" || cfg.Timeout != 5*time.Second || len(cfg.Env) != 0 {
			t.Fatalf("cfg %+v %v", cfg, err)
		}
		// The spawn digest covers the template, never the resolved secret.
		if strings.Contains(SpawnQuestion(&s), "ghp_") || strings.Contains(SpawnQuestion(&s), "Bearer") || strings.Contains(SpawnQuestion(&s), "x=1") {
			t.Fatalf("question shows a value: %s", SpawnQuestion(&s))
		}
	})
	t.Run("missing variable names it, not a value", func(t *testing.T) {
		s := parseServer(SourceOperator, "/h/config.json", "gh", json.RawMessage(`{"url":"https://h/mcp","headers":{"Authorization":"Bearer ${NOPE}"}}`))
		_, _, err := s.ClientConfig(base, "")
		if err == nil || !strings.Contains(err.Error(), "${NOPE}") || !strings.Contains(err.Error(), `headers["Authorization"]`) {
			t.Fatalf("err %v", err)
		}
	})
	for _, tc := range []struct {
		name, src, raw, want string
	}{
		{"project may not reference the environment", "project", `{"url":"https://h/mcp","headers":{"Authorization":"Bearer ${GITHUB_TOKEN}"}}`, "operator file only"},
		{"http to a remote host", "operator", `{"url":"http://example.com/mcp"}`, "not loopback"},
		{"credentials in the url", "operator", `{"url":"https://u:p@h/mcp"}`, "carries credentials"},
		{"both command and url", "operator", `{"url":"https://h/mcp","command":"x"}`, "both set"},
		{"headers without url", "operator", `{"command":"x","headers":{"A":"b"}}`, "headers needs url"},
		{"neither", "operator", `{}`, "command (or url) is required"},
		{"unterminated reference", "operator", `{"url":"https://h/mcp","headers":{"A":"${X"}}`, "unterminated"},
		{"unsupported version", "operator", `{"command":"x","protocol_version":"2030-01-01"}`, "protocol_version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parseServer(Source(tc.src), "/h/odek.json", "gh", json.RawMessage(tc.raw))
			if s.Err == nil || !strings.Contains(s.Err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", s.Err, tc.want)
			}
			if strings.Contains(s.Err.Error(), "ghp_") {
				t.Fatalf("error leaks a value: %v", s.Err)
			}
		})
	}
	t.Run("loopback http, and allow_insecure_http from the operator only", func(t *testing.T) {
		if s := parseServer(SourceProject, "/p/odek.json", "local", json.RawMessage(`{"url":"http://127.0.0.1:8080/mcp"}`)); s.Err != nil {
			t.Fatal(s.Err)
		}
		if s := parseServer(SourceOperator, "/h/config.json", "lan", json.RawMessage(`{"url":"http://10.0.0.5/mcp","allow_insecure_http":true}`)); s.Err != nil {
			t.Fatal(s.Err)
		}
		s := parseServer(SourceProject, "/p/odek.json", "lan", json.RawMessage(`{"url":"http://10.0.0.5/mcp","allow_insecure_http":true}`))
		if s.Err == nil || len(s.Warnings) == 0 {
			t.Fatalf("project allow_insecure_http honoured: %v %v", s.Err, s.Warnings)
		}
	})
}

// The operator's stored OAuth tokens go to the operator's url server of
// that name only: a project server of the same name (the operator file not
// declaring it) gets none, nor does a server with a configured
// Authorization header.
func TestOAuthSourceOperatorOnly(t *testing.T) {
	home := t.TempDir()
	rec := `{"server":"notes","resource":"https://notes.example/mcp","access_token":"tok","client_id":"c"}`
	if err := os.MkdirAll(filepath.Join(home, "mcp-auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "mcp-auth", "notes.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"ODEK_HOME=" + home}
	entry := `{"notes":{"url":"https://notes.example/mcp"}}`
	for _, tc := range []struct {
		name     string
		op, proj string
		wantAuth bool
	}{
		{"operator server", entry, "", true},
		{"project server", "", entry, false},
		{"operator server with its own Authorization", `{"notes":{"url":"https://notes.example/mcp","headers":{"Authorization":"Bearer x"}}}`, "", false},
	} {
		specs, _, err := ParseConfig(Section{Path: filepath.Join(home, "config.json"), Raw: []byte(tc.op)}, Section{Path: filepath.Join(t.TempDir(), "odek.json"), Raw: []byte(tc.proj)})
		if err != nil || len(specs) != 1 {
			t.Fatalf("%s: %v %v", tc.name, specs, err)
		}
		cfg, _, err := specs[0].ClientConfig(base, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (cfg.Auth != nil) != tc.wantAuth {
			t.Errorf("%s: Auth set = %v, want %v", tc.name, cfg.Auth != nil, tc.wantAuth)
		}
	}
	// A project file's oauth object is ignored with a warning.
	specs, _, _ := ParseConfig(Section{}, Section{Path: filepath.Join(t.TempDir(), "odek.json"), Raw: []byte(`{"p":{"url":"https://p.example/mcp","oauth":{"client_id":"x"}}}`)})
	if len(specs) != 1 || specs[0].OAuth != nil || !strings.Contains(strings.Join(specs[0].Warnings, "\n"), "oauth is ignored") {
		t.Fatalf("project oauth: %+v", specs)
	}
}
