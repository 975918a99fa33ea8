package config

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/sandbox"
)

func f64(v float64) *float64 { return &v }

// TestSections covers the one tighten-only rule over every typed section:
// what the operator sets, what a project may and may not change, and the
// errors that name the file, the field and the limit.
func TestSections(t *testing.T) {
	tests := []struct {
		name, op, proj string
		check          func(t *testing.T, c *Config)
		warnFields     []string // fields of the project warnings, in order
		err            string   // substring of the error; "" ⇒ success
	}{
		{name: "absent", check: func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.Limits, Limits{}) || c.Subagent != (Subagent{}) || c.Context.Share != 0 {
				t.Errorf("zero sections expected: %+v %+v %+v", c.Limits, c.Subagent, c.Context)
			}
		}},
		{name: "operator limits and prices",
			op: `{"limits":{"max_runtime_seconds":90,"max_tool_calls":5,"max_cost_usd":2.5,"input_cost_per_million_usd":1,"model_prices":{"m":{"output_cost_per_million_usd":10}}}}`,
			check: func(t *testing.T, c *Config) {
				want := Limits{MaxRuntimeSeconds: 90, MaxToolCalls: 5, MaxCostUSD: 2.5, InputCostPerMillionUSD: f64(1),
					ModelPrices: map[string]ModelPrice{"m": {OutputCostPerMillionUSD: f64(10)}}}
				if !reflect.DeepEqual(c.Limits, want) {
					t.Errorf("limits = %+v", c.Limits)
				}
				if c.Sources["limits.max_tool_calls"] != SourceOperator || c.Sources["limits.max_input_tokens"] != SourceDefault {
					t.Errorf("sources = %v", c.Sources)
				}
			}},
		{name: "project lowers and adds limits", op: `{"limits":{"max_tool_calls":5}}`, proj: `{"limits":{"max_tool_calls":2,"max_cost_usd":0.1}}`,
			check: func(t *testing.T, c *Config) {
				if c.Limits.MaxToolCalls != 2 || c.Limits.MaxCostUSD != 0.1 || c.Sources["limits.max_tool_calls"] != SourceProject {
					t.Errorf("limits = %+v sources %v", c.Limits, c.Sources)
				}
			}},
		{name: "project may not raise limits or set prices", op: `{"limits":{"max_tool_calls":5}}`,
			proj:       `{"limits":{"max_tool_calls":9,"input_cost_per_million_usd":0,"model_prices":{}}}`,
			warnFields: []string{"limits.max_tool_calls", "limits.input_cost_per_million_usd", "limits.model_prices"},
			check: func(t *testing.T, c *Config) {
				if c.Limits.MaxToolCalls != 5 || c.Limits.InputCostPerMillionUSD != nil || c.Limits.ModelPrices != nil {
					t.Errorf("limits = %+v", c.Limits)
				}
			}},
		{name: "negative limit", op: `{"limits":{"max_tool_calls":-1}}`, err: `field "limits.max_tool_calls": got -1: want at least 0 (limit min)`},
		{name: "negative project runtime", proj: `{"limits":{"max_runtime_seconds":-0.5}}`, err: `odek.json: field "limits.max_runtime_seconds"`},
		{name: "negative model price", op: `{"limits":{"model_prices":{"m":{"input_cost_per_million_usd":-1}}}}`, err: `"limits.model_prices.m.input_cost_per_million_usd"`},
		{name: "runtime too large", op: `{"limits":{"max_runtime_seconds":1e30}}`, err: "limits.max_runtime_seconds"},
		{name: "misspelt limit", op: `{"limits":{"max_tool_call":5}}`, err: `field "limits.max_tool_call": unknown field`},
		{name: "limits not an object", op: `{"limits":[1]}`, err: `field "limits"`},
		{name: "fractional tokens", op: `{"limits":{"max_input_tokens":1.5}}`, err: "limits.max_input_tokens"},

		{name: "subagent defaults bound the project", proj: `{"subagent":{"max_depth":5,"max_concurrency":1,"task_timeout_seconds":9999}}`,
			warnFields: []string{"subagent.max_depth", "subagent.task_timeout_seconds"},
			check: func(t *testing.T, c *Config) {
				if c.Subagent != (Subagent{MaxConcurrency: 1}) {
					t.Errorf("subagent = %+v", c.Subagent)
				}
			}},
		{name: "subagent inherit only to share", op: `{"subagent":{"budget_inherit":"share"}}`, proj: `{"subagent":{"budget_inherit":"operator"}}`,
			warnFields: []string{"subagent.budget_inherit"},
			check: func(t *testing.T, c *Config) {
				if c.Subagent.BudgetInherit != "share" {
					t.Errorf("subagent = %+v", c.Subagent)
				}
			}},
		{name: "subagent project switches to share", proj: `{"subagent":{"budget_inherit":"share"}}`,
			check: func(t *testing.T, c *Config) {
				if c.Subagent.BudgetInherit != "share" {
					t.Errorf("subagent = %+v", c.Subagent)
				}
			}},
		{name: "subagent above cap", op: `{"subagent":{"max_concurrency":9}}`, err: `"subagent.max_concurrency": got 9: want at most 8`},
		{name: "subagent bad mode", op: `{"subagent":{"budget_inherit":"half"}}`, err: `want one of unset, "operator", "share"`},

		{name: "sandbox operator sets all",
			op: `{"sandbox":{"mode":"on","allow_connect_ports":[443,80],"read_only_paths":["/opt/tools"],"deny_paths":["/etc/app"],"max_memory_mb":512,"max_processes":64}}`,
			check: func(t *testing.T, c *Config) {
				want := Sandbox{Mode: "on", AllowConnectPorts: []int{443, 80}, ReadOnlyPaths: []string{"/opt/tools"}, DenyPaths: []string{"/etc/app"}, MaxMemoryMB: 512, MaxProcesses: 64}
				if !reflect.DeepEqual(c.Sandbox, want) {
					t.Errorf("sandbox = %+v", c.Sandbox)
				}
			}},
		{name: "sandbox project tightens", op: `{"sandbox":{"allow_connect_ports":[443,80],"deny_paths":["/a"],"max_memory_mb":1024}}`,
			proj: `{"sandbox":{"mode":"on","confine":true,"allow_connect_ports":[443],"deny_paths":["/b"],"max_memory_mb":256,"max_processes":10}}`,
			check: func(t *testing.T, c *Config) {
				want := Sandbox{Mode: "on", Confine: true, AllowConnectPorts: []int{443}, DenyPaths: []string{"/a", "/b"}, MaxMemoryMB: 256, MaxProcesses: 10}
				if !reflect.DeepEqual(c.Sandbox, want) {
					t.Errorf("sandbox = %+v", c.Sandbox)
				}
			}},
		{name: "sandbox project may not loosen", op: `{"sandbox":{"allow_connect_ports":[443],"max_memory_mb":256}}`,
			proj:       `{"sandbox":{"mode":"off","allow_connect_ports":[443,6379],"read_only_paths":["/home"],"max_memory_mb":1024}}`,
			warnFields: []string{"sandbox.mode", "sandbox.allow_connect_ports", "sandbox.read_only_paths", "sandbox.max_memory_mb"},
			check: func(t *testing.T, c *Config) {
				want := Sandbox{AllowConnectPorts: []int{443}, MaxMemoryMB: 256}
				if !reflect.DeepEqual(c.Sandbox, want) {
					t.Errorf("sandbox = %+v", c.Sandbox)
				}
			}},
		{name: "sandbox bad mode", op: `{"sandbox":{"mode":"maybe"}}`, err: `"sandbox.mode": got "maybe"`},
		{name: "sandbox bad port", proj: `{"sandbox":{"allow_connect_ports":[70000]}}`, err: `"sandbox.allow_connect_ports[0]": got 70000: want at most 65535`},
		{name: "sandbox relative path", op: `{"sandbox":{"read_only_paths":["opt"]}}`, err: `"sandbox.read_only_paths[0]": "opt" is not an absolute path`},
		{name: "sandbox too many ports", op: `{"sandbox":{"allow_connect_ports":[` + strings.Repeat("1,", 64) + `1]}}`, err: "has 65 entries: at most 64 (limit maxitems)"},
		{name: "sandbox deny paths of both files past the limit", op: `{"sandbox":{"deny_paths":[` + strings.Repeat(`"/a",`, 40) + `"/a"]}}`,
			proj: `{"sandbox":{"deny_paths":[` + strings.Repeat(`"/b",`, 30) + `"/b"]}}`, err: "config.json and "},

		{name: "context", op: `{"context_window":{"m":100000,"n":8000},"context_share":0.7}`, proj: `{"context_window":{"m":50000,"n":9000,"p":1000},"context_share":0.5}`,
			warnFields: []string{"context_window"},
			check: func(t *testing.T, c *Config) {
				if !reflect.DeepEqual(c.Context.Window, map[string]int{"m": 50000, "n": 8000, "p": 1000}) || c.Context.Share != 0.5 {
					t.Errorf("context = %+v", c.Context)
				}
			}},
		{name: "context share above the default", proj: `{"context_share":0.9}`, warnFields: []string{"context_share"},
			check: func(t *testing.T, c *Config) {
				if c.Context.Share != 0 {
					t.Errorf("context = %+v", c.Context)
				}
			}},
		{name: "context share out of range", op: `{"context_share":1.5}`, err: `"context_share": got 1.5: want at most 1`},

		{name: "mcp servers kept raw per file", op: `{"mcp_servers":{"a":{"command":"/bin/a"}}}`, proj: `{"mcp_servers":{"b":{"command":"b"}}}`,
			check: func(t *testing.T, c *Config) {
				if !strings.Contains(string(c.MCPServers.Operator.Raw), "/bin/a") || !strings.Contains(string(c.MCPServers.Project.Raw), `"b"`) ||
					c.MCPServers.Project.Path != c.Layers.Project.Path {
					t.Errorf("mcp = %+v", c.MCPServers)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warns, err := Load(dirs(t, tt.op, tt.proj))
			if tt.err != "" {
				var e *Error
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &e) || !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrSyntax) {
					t.Fatalf("err = %v, want a *config.Error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range warns {
				if w.Source != c.Layers.Project.Path || !strings.Contains(w.Message, "rule") {
					t.Errorf("warning %v does not name the project file and the rule", w)
				}
				got = append(got, w.Field)
			}
			if !slices.Equal(got, tt.warnFields) {
				t.Errorf("warned fields = %v, want %v", got, tt.warnFields)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

// FuzzSections: whatever a project file says, the merged sections never
// loosen the operator's: every "lower" field stays at or below the
// operator's (effective) value, "never" fields keep the operator's, and
// lists the project may only shrink stay within the operator's.
func FuzzSections(f *testing.F) {
	for _, seed := range []string{
		`{"limits":{"max_tool_calls":9,"max_cost_usd":0.1,"input_cost_per_million_usd":0}}`,
		`{"subagent":{"max_depth":8,"budget_inherit":"operator","task_timeout_seconds":86400}}`,
		`{"sandbox":{"mode":"off","allow_connect_ports":[22,443],"read_only_paths":["/"],"max_memory_mb":99999}}`,
		`{"context_window":{"m":200000,"x":1},"context_share":1}`,
		`{"limits":null,"sandbox":{"mode":"on"}}`, `{"sandbox":{"deny_paths":["/x"]}}`, `{}`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	op := `{"limits":{"max_tool_calls":5,"max_runtime_seconds":60,"output_cost_per_million_usd":2},
		"subagent":{"max_concurrency":4},"sandbox":{"allow_connect_ports":[443],"max_processes":50},
		"context_window":{"m":100000},"context_share":0.6}`
	f.Fuzz(func(t *testing.T, data []byte) {
		o := dirs(t, op, "")
		base, _ := mustLoad(t, o)
		writeFile(t, o.ProjectDir+"/"+ProjectFileName, string(data), 0o644)
		c, _, err := Load(o)
		if err != nil {
			return
		}
		assertTighter(t, "", reflect.ValueOf(base.Limits), reflect.ValueOf(c.Limits), reflect.TypeOf(Limits{}))
		assertTighter(t, "", reflect.ValueOf(base.Subagent), reflect.ValueOf(c.Subagent), reflect.TypeOf(Subagent{}))
		assertTighter(t, "", reflect.ValueOf(base.Sandbox), reflect.ValueOf(c.Sandbox), reflect.TypeOf(Sandbox{}))
		assertTighter(t, "", reflect.ValueOf(base.Context), reflect.ValueOf(c.Context), reflect.TypeOf(Context{}))
	})
}

func assertTighter(t *testing.T, _ string, op, got reflect.Value, typ reflect.Type) {
	t.Helper()
	for i := range typ.NumField() {
		f := typ.Field(i)
		o, g := op.Field(i), got.Field(i)
		switch rule := f.Tag.Get("project"); {
		case rule == "never":
			if !reflect.DeepEqual(o.Interface(), g.Interface()) {
				t.Fatalf("%s: operator-only field changed: %v -> %v", f.Name, o.Interface(), g.Interface())
			}
		case rule == "subset":
			for j := range g.Len() {
				if !containsValue(o, g.Index(j)) {
					t.Fatalf("%s: %v added", f.Name, g.Index(j).Interface())
				}
			}
		case rule == "lower" && o.Kind() == reflect.Map:
			for _, k := range o.MapKeys() {
				if number(g.MapIndex(k)) > number(o.MapIndex(k)) {
					t.Fatalf("%s[%v] raised", f.Name, k)
				}
			}
		case rule == "lower":
			if number(o) > 0 && (number(g) == 0 || number(g) > number(o)) {
				t.Fatalf("%s raised: %v -> %v", f.Name, number(o), number(g))
			}
		case strings.HasPrefix(rule, "only="):
			if g.String() != o.String() && g.String() != strings.TrimPrefix(rule, "only=") {
				t.Fatalf("%s: %q -> %q", f.Name, o.String(), g.String())
			}
		}
	}
}

// The defaults the sandbox section documents (and merges a project's
// value against) are the ones the sandbox applies to a limit left at 0.
func TestSandboxDefaultTagsMatchTheSandbox(t *testing.T) {
	want := map[string]int{
		"MaxMemoryMB": sandbox.DefaultMaxMemoryMB, "MaxCPUSeconds": sandbox.DefaultMaxCPUSeconds,
		"MaxProcesses": sandbox.DefaultMaxProcesses, "MaxFileSizeMB": sandbox.DefaultMaxFileSizeMB,
	}
	typ := reflect.TypeFor[Sandbox]()
	for name, def := range want {
		f, ok := typ.FieldByName(name)
		if !ok {
			t.Errorf("Sandbox has no %s", name)
			continue
		}
		if got := f.Tag.Get("default"); got != strconv.Itoa(def) {
			t.Errorf("Sandbox.%s default %q, the sandbox applies %d", name, got, def)
		}
	}
}
