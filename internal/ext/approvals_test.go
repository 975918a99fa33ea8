package ext

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
)

func TestDecideSpawn(t *testing.T) {
	tests := []struct {
		src                           Source
		persisted, approveAll, canAsk bool
		want                          Decision
	}{
		{SourceOperator, false, false, false, Decision{Allow: true, Grant: GrantOperator}},
		{SourceOperator, false, false, true, Decision{Allow: true, Grant: GrantOperator}},
		{SourceProject, true, false, false, Decision{Allow: true, Grant: GrantPersisted}},
		{SourceProject, true, true, true, Decision{Allow: true, Grant: GrantPersisted}},
		{SourceProject, false, true, false, Decision{Allow: true, Grant: GrantEnv}},
		{SourceProject, false, true, true, Decision{Allow: true, Grant: GrantEnv}},
		{SourceProject, false, false, true, Decision{Ask: true}},
		{SourceProject, false, false, false, Decision{}},
		{Source("weird"), false, false, false, Decision{Allow: true, Grant: GrantOperator}},
	}
	for _, tc := range tests {
		if got := DecideSpawn(tc.src, tc.persisted, tc.approveAll, tc.canAsk); got != tc.want {
			t.Errorf("DecideSpawn(%s, persisted=%v, all=%v, ask=%v) = %+v, want %+v", tc.src, tc.persisted, tc.approveAll, tc.canAsk, got, tc.want)
		}
	}
}

func TestDecideTool(t *testing.T) {
	tests := []struct {
		auto, persisted, approveAll, canAsk bool
		want                                Decision
	}{
		{true, false, false, false, Decision{Allow: true, Grant: GrantAutoApprove}},
		{true, true, true, true, Decision{Allow: true, Grant: GrantAutoApprove}},
		{false, true, false, false, Decision{Allow: true, Grant: GrantPersisted}},
		{false, false, true, false, Decision{Allow: true, Grant: GrantEnv}},
		{false, false, false, true, Decision{Ask: true}},
		{false, false, false, false, Decision{}},
	}
	for _, tc := range tests {
		if got := DecideTool(tc.auto, tc.persisted, tc.approveAll, tc.canAsk); got != tc.want {
			t.Errorf("DecideTool(%v,%v,%v,%v) = %+v, want %+v", tc.auto, tc.persisted, tc.approveAll, tc.canAsk, got, tc.want)
		}
	}
}

var goodKey = strings.Repeat("ab", 32)

func TestParseApprovals(t *testing.T) {
	tests := []struct {
		name, in string
		errHas   string
	}{
		{"empty object needs version", `{}`, "version 0"},
		{"minimal", `{"version":1}`, ""},
		{"full", `{"version":1,"servers":{"` + goodKey + `":{"server":"s","project":"/p/odek.json","approved_at":"2026-01-01T00:00:00Z"}},"tools":{"` + goodKey + `":{"server":"s","tool":"t","approved_at":"2026-01-01T00:00:00Z","extra":1}},"future":true}`, ""},
		{"future version", `{"version":2}`, "version 2"},
		{"uppercase key", `{"version":1,"tools":{"` + strings.ToUpper(goodKey) + `":{}}}`, "not 64 lowercase hex"},
		{"short key", `{"version":1,"servers":{"abc":{}}}`, "not 64 lowercase hex"},
		{"array", `[]`, "not a JSON object"},
		{"empty", ``, "not a JSON object"},
		{"garbage", `{"version":1,`, "syntax error"},
		{"wrong type", `{"version":1,"tools":[]}`, `field "tools"`},
		{"bad time", `{"version":1,"tools":{"` + goodKey + `":{"approved_at":"yesterday"}}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseApprovals([]byte(tc.in))
			if tc.name == "bad time" { // a time that does not parse is a decode error
				if !errors.Is(err, ErrApprovals) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if tc.errHas == "" {
				if err != nil {
					t.Fatal(err)
				}
				if a.Servers == nil || a.Tools == nil {
					t.Fatal("nil maps")
				}
				b, err := ParseApprovals(a.Marshal())
				if err != nil || len(b.Servers) != len(a.Servers) || len(b.Tools) != len(a.Tools) {
					t.Fatalf("round trip: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrApprovals) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("err %v, want ErrApprovals with %q", err, tc.errHas)
			}
		})
	}
	big := make([]byte, MaxApprovalsBytes+1)
	if _, err := ParseApprovals(big); err == nil || !strings.Contains(err.Error(), "limit 4194304") {
		t.Fatalf("oversized: %v", err)
	}
}

func TestApprovalsFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	a, err := ReadApprovals(dir)
	if err != nil || len(a.Servers)+len(a.Tools) != 0 {
		t.Fatalf("missing file: %v %+v", err, a)
	}
	a.Tools[goodKey] = Approval{Server: "s", Tool: "t", ApprovedAt: time.Unix(1e9, 0).UTC()}
	if err := WriteApprovals(dir, a); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, ApprovalsFileName)
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", di.Mode())
	}
	b, err := ReadApprovals(dir)
	if err != nil || b.Tools[goodKey].Tool != "t" {
		t.Fatalf("read back: %v %+v", err, b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}

	os.Chmod(p, 0o620)
	if _, err := ReadApprovals(dir); !errors.Is(err, ErrApprovals) || !strings.Contains(err.Error(), "writable by group") {
		t.Fatalf("group-writable accepted: %v", err)
	}
	os.Chmod(p, 0o600)

	link := t.TempDir()
	if err := os.Symlink(p, filepath.Join(link, ApprovalsFileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadApprovals(link); !errors.Is(err, ErrApprovals) {
		t.Fatalf("symlink accepted: %v", err)
	}
	os.WriteFile(p, []byte("{broken"), 0o600)
	if _, err := ReadApprovals(dir); !errors.Is(err, ErrApprovals) {
		t.Fatalf("broken accepted: %v", err)
	}
}

func TestSpawnKeyCoversEverything(t *testing.T) {
	base := func() ServerSpec {
		s := parseServer(SourceProject, "/p/odek.json", "srv", json.RawMessage(`{"command":"/bin/srv","args":["-a"],"env":{"A":"1"},"artifact_roots":["/r"]}`))
		if s.Err != nil {
			t.Fatal(s.Err)
		}
		return s
	}
	b := base()
	k0 := SpawnKey(&b)
	if len(k0) != 64 || !isKey(k0) {
		t.Fatalf("key %q", k0)
	}
	if again := base(); SpawnKey(&again) != k0 {
		t.Fatal("key not deterministic")
	}
	changes := map[string]func(*ServerSpec){
		"file":      func(s *ServerSpec) { s.File = "/q/odek.json" },
		"name":      func(s *ServerSpec) { s.Name = "srv2" },
		"command":   func(s *ServerSpec) { s.Command = "/bin/other" },
		"args":      func(s *ServerSpec) { s.Args = []string{"-b"} },
		"env value": func(s *ServerSpec) { s.Env = map[string]string{"A": "2"} },
		"env key":   func(s *ServerSpec) { s.Env = map[string]string{"B": "1"} },
		"timeout":   func(s *ServerSpec) { s.Timeout = time.Minute },
		"resp":      func(s *ServerSpec) { s.MaxResponseBytes = 1 },
		"chars":     func(s *ServerSpec) { s.MaxResultChars = 1 },
		"startup":   func(s *ServerSpec) { s.StartupTimeout = time.Minute },
		"roots":     func(s *ServerSpec) { s.ArtifactRoots = []string{"/"} },
		"required":  func(s *ServerSpec) { s.Required = true },
	}
	for name, change := range changes {
		s := base()
		change(&s)
		if SpawnKey(&s) == k0 {
			t.Errorf("changing %s keeps the spawn key", name)
		}
	}
	// A stripped secret is not passed, so it does not change the key.
	s := base()
	s.Env = map[string]string{"A": "1", "MY_TOKEN": "x"}
	if SpawnKey(&s) != k0 {
		t.Error("a stripped env key changed the spawn key")
	}
}

func TestToolKeyCoversEverything(t *testing.T) {
	s := ServerSpec{Name: "srv", Source: SourceOperator}
	tool := mcpclient.Tool{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}
	k0 := ToolKey(&s, tool)
	variants := map[string]func() string{
		"server":      func() string { s2 := s; s2.Name = "x"; return ToolKey(&s2, tool) },
		"project":     func() string { s2 := s; s2.Source, s2.File = SourceProject, "/p/odek.json"; return ToolKey(&s2, tool) },
		"name":        func() string { t2 := tool; t2.Name = "u"; return ToolKey(&s, t2) },
		"description": func() string { t2 := tool; t2.Description = "d2"; return ToolKey(&s, t2) },
		"schema":      func() string { t2 := tool; t2.InputSchema = json.RawMessage(`{}`); return ToolKey(&s, t2) },
		"annotations": func() string {
			t2 := tool
			t2.Annotations = json.RawMessage(`{"readOnlyHint":true}`)
			return ToolKey(&s, t2)
		},
	}
	for name, k := range variants {
		if k() == k0 {
			t.Errorf("changing %s keeps the tool key", name)
		}
	}
	p1 := ServerSpec{Name: "srv", Source: SourceProject, File: "/a/odek.json"}
	p2 := ServerSpec{Name: "srv", Source: SourceProject, File: "/b/odek.json"}
	if ToolKey(&p1, tool) == ToolKey(&p2, tool) {
		t.Error("tool approvals are shared between projects")
	}
}

func TestQuestions(t *testing.T) {
	s := parseServer(SourceProject, "/p/odek.json", "srv", json.RawMessage(`{"command":"/bin/srv","args":["-a","two words"],
		"env":{"LEVEL":"debug-secret-value","API_TOKEN":"tok"},"artifact_roots":["/r"]}`))
	q := SpawnQuestion(&s)
	for _, want := range []string{`"srv"`, "/p/odek.json", "/bin/srv", `-a "two words"`, "LEVEL (values not shown)", "timeout 30s", "max_response_bytes 10485760", "max_result_chars 200000", "artifact_roots: /r", "[y/N]"} {
		if !strings.Contains(q, want) {
			t.Errorf("spawn question lacks %q:\n%s", want, q)
		}
	}
	if strings.Contains(q, "debug-secret-value") || strings.Contains(q, "API_TOKEN") {
		t.Errorf("spawn question shows a value or a stripped key:\n%s", q)
	}
	tq := ToolsQuestion(&s, []mcpclient.Tool{
		{Name: "zeta", Description: "z\x1b[2Jclear", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{},"mode":{}}}`)},
		{Name: "alpha", Description: strings.Repeat("x", MaxDescriptionChars+100)},
	})
	if strings.Index(tq, "alpha") > strings.Index(tq, "zeta") || strings.Contains(tq, "\x1b") || !strings.Contains(tq, "arguments: mode, path") {
		t.Errorf("tools question not sorted, sanitised or without arguments:\n%q", tq)
	}
	// The prompt shows exactly what the model will see of a description.
	if !strings.Contains(tq, strings.Repeat("x", MaxDescriptionChars)+"…") || strings.Contains(tq, strings.Repeat("x", MaxDescriptionChars+1)) {
		t.Errorf("description not shown up to MaxDescriptionChars")
	}
	tool := &Tool{qualified: "s__alpha", server: "s", mcp: mcpclient.Tool{Name: "alpha", Description: strings.Repeat("x", MaxDescriptionChars+100)}}
	if d := tool.Definition().Description; strings.Count(d, "x") != MaxDescriptionChars {
		t.Errorf("model sees %d description characters, want %d", strings.Count(d, "x"), MaxDescriptionChars)
	}
}
