package subagent

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/tools"
)

func TestParseTask(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"minimal", `{"goal":"g"}`, ""},
		{"unknown fields ignored", `{"goal":"g","future":{"x":1},"budget":{"max_tool_calls":3,"new_flag":true}}`, ""},
		{"no goal", `{"context":"c"}`, "goal is required"},
		{"blank goal", `{"goal":"  "}`, "goal is required"},
		{"not an object", `[1]`, "want a JSON object"},
		{"trailing data", `{"goal":"g"} {}`, "trailing data"},
		{"relative root", `{"goal":"g","artifact_root":"rel/dir"}`, "artifact_root"},
		{"unclean root", `{"goal":"g","artifact_root":"/a/../b"}`, "artifact_root"},
		{"root inside the confined root", `{"goal":"g","artifact_root":"/chats/2/.odek/artifacts/t1","confine":{"root":"/chats/2"}}`, "must lie outside the directory the child is confined to"},
		{"root is the confined root", `{"goal":"g","artifact_root":"/chats/2","confine":{"root":"/chats/2"}}`, "overlaps confine.root"},
		{"root above the confined root", `{"goal":"g","artifact_root":"/chats","confine":{"root":"/chats/2"}}`, "overlaps confine.root"},
		{"root outside the confined root", `{"goal":"g","artifact_root":"/home/odek/subagents/run-1/s/t1","confine":{"root":"/chats/2"}}`, ""},
		{"bad risk", `{"goal":"g","max_risk":"blocked"}`, "max_risk"},
		{"bad task id", `{"goal":"g","task_id":"../x"}`, "task_id"},
		{"bad base url", `{"goal":"g","base_url":"file:///etc"}`, "base_url"},
		{"negative budget", `{"goal":"g","budget":{"max_tool_calls":-1}}`, "budget"},
		{"bad timeout", `{"goal":"g","timeout_seconds":-1}`, "timeout_seconds"},
		{"huge goal", `{"goal":"` + strings.Repeat("a", MaxGoalBytes+1) + `"}`, "goal is 16385 bytes, limit 16384"},
		{"too big", `{"goal":"g","pad":"` + strings.Repeat("a", MaxTaskBytes) + `"}`, "limit 262144"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTask([]byte(tt.raw))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidTask) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want ErrInvalidTask containing %q", err, tt.want)
			}
		})
	}
}

func TestInherit(t *testing.T) {
	op := budget.Limits{MaxRuntime: time.Minute, MaxToolCalls: 10, MaxCostUSD: 1}
	tests := []struct {
		name    string
		b       *Budget
		want    budget.Limits
		wantErr string
	}{
		{"nil keeps operator", nil, op, ""},
		{"zero remaining means unlimited by the parent", &Budget{}, op, ""},
		{"lower parent wins", &Budget{MaxRuntimeSeconds: 5, MaxToolCalls: 2, MaxCostUSD: 0.5}, budget.Limits{MaxRuntime: 5 * time.Second, MaxToolCalls: 2, MaxCostUSD: 0.5}, ""},
		{"higher parent loses", &Budget{MaxRuntimeSeconds: 600, MaxToolCalls: 50, MaxCostUSD: 9}, op, ""},
		{"runtime exhausted", &Budget{RuntimeExhausted: true}, op, "runtime"},
		{"tool calls exhausted", &Budget{MaxToolCalls: 0, ToolCallsExhausted: true}, op, "tool_calls"},
		{"cost exhausted", &Budget{CostExhausted: true}, op, "cost_usd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.b.Inherit(op)
			if tt.wantErr != "" {
				var ee *budget.ExceededError
				if !errors.As(err, &ee) || ee.Limit != tt.wantErr || ee.Max != 0 {
					t.Fatalf("err %v, want ExceededError for %s with max 0", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	// An unlimited operator dimension takes the parent's remaining value.
	got, _ := (&Budget{MaxToolCalls: 4}).Inherit(budget.Limits{})
	if got.MaxToolCalls != 4 {
		t.Fatalf("unlimited operator: %+v", got)
	}
}

func TestRemaining(t *testing.T) {
	l := budget.Limits{MaxRuntime: 10 * time.Second, MaxToolCalls: 5, MaxCostUSD: 2}
	tests := []struct {
		name      string
		u         budget.Usage
		elapsed   time.Duration
		costKnown bool
		want      Budget
	}{
		{"fresh", budget.Usage{}, 0, true, Budget{MaxRuntimeSeconds: 10, MaxToolCalls: 5, MaxCostUSD: 2}},
		{"partly spent", budget.Usage{ToolCalls: 3, CostUSD: 0.5}, 4 * time.Second, true, Budget{MaxRuntimeSeconds: 6, MaxToolCalls: 2, MaxCostUSD: 1.5}},
		{"all exhausted", budget.Usage{ToolCalls: 5, CostUSD: 2}, 10 * time.Second, true, Budget{RuntimeExhausted: true, ToolCallsExhausted: true, CostExhausted: true}},
		{"unknown prices leave cost open", budget.Usage{CostUSD: 5}, 0, false, Budget{MaxRuntimeSeconds: 10, MaxToolCalls: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := *Remaining(l, tt.u, tt.elapsed, tt.costKnown); got != tt.want {
				t.Fatalf("got %+v want %+v", got, tt.want)
			}
		})
	}
	if got := *Remaining(budget.Limits{}, budget.Usage{ToolCalls: 99}, time.Hour, true); got != (Budget{}) {
		t.Fatalf("unlimited parent: %+v", got)
	}
}

func TestChildPolicyNeverPrompts(t *testing.T) {
	p := tools.DefaultPolicy()
	p.Classes[tools.ClassCodeExecution] = tools.ActionAllow
	p.NonInteractive = tools.ActionAllow // the operator's non-interactive allow does not reach children's prompts
	tests := []struct {
		maxRisk tools.Class
		class   tools.Class
		want    tools.Action
	}{
		{"", tools.ClassSafe, tools.ActionAllow},
		{"", tools.ClassLocalWrite, tools.ActionAllow},
		{"", tools.ClassCodeExecution, tools.ActionAllow},
		{"", tools.ClassNetworkEgress, tools.ActionDeny}, // prompt ⇒ deny
		{"", tools.ClassDestructive, tools.ActionDeny},
		{"", tools.ClassBlocked, tools.ActionDeny},
		{tools.ClassSafe, tools.ClassLocalWrite, tools.ActionDeny},
		{tools.ClassLocalWrite, tools.ClassLocalWrite, tools.ActionAllow},
		{tools.ClassLocalWrite, tools.ClassCodeExecution, tools.ActionDeny},
	}
	for _, tt := range tests {
		cp := ChildPolicy(p, tt.maxRisk)
		if got := cp.Decide(tt.class); got != tt.want {
			t.Errorf("max_risk %q class %s: %s, want %s", tt.maxRisk, tt.class, got, tt.want)
		}
		if cp.NonInteractive != tools.ActionDeny {
			t.Errorf("NonInteractive %s", cp.NonInteractive)
		}
	}
}

func TestParseTasks(t *testing.T) {
	many := `{"tasks":[` + strings.TrimSuffix(strings.Repeat(`{"goal":"g"},`, MaxTasks+1), ",") + `]}`
	tests := []struct{ raw, want string }{
		{`{"tasks":[{"goal":"a","extra":1}]}`, ""},
		{`{"tasks":[]}`, "want 1 to 8 tasks, got 0"},
		{many, "want 1 to 8 tasks, got 9"},
		{`{"tasks":[{"context":"c"}]}`, "tasks[0]"},
		{`{"tasks":[{"goal":"a","max_risk":"nuclear"}]}`, "max_risk"},
		{`{"tasks":"x"}`, "want {\"tasks\""},
	}
	for _, tt := range tests {
		_, err := ParseTasks([]byte(tt.raw))
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalidTask)) {
			t.Errorf("ParseTasks(%.60s) = %v, want %q", tt.raw, err, tt.want)
		}
	}
}

func TestGoalHashAndExitCodes(t *testing.T) {
	if h := GoalHash("secret goal"); len(h) != 16 || strings.Contains(h, "secret") {
		t.Fatalf("goal hash %q", h)
	}
	tests := []struct {
		r    Result
		want int
	}{
		{Result{Status: StatusSuccess}, 0},
		{Result{Status: StatusPartial}, 1},
		{Result{Status: StatusError}, 1},
		{Result{Status: StatusBudgetExhausted}, 4},
		{Result{Status: StatusPartial, TimedOut: true}, 2},
	}
	for _, tt := range tests {
		if got := tt.r.ExitCode(); got != tt.want {
			t.Errorf("%+v: exit %d want %d", tt.r, got, tt.want)
		}
	}
}

func TestChildEnvDropsKeyAndSetsDepth(t *testing.T) {
	env := childEnv([]string{"PATH=/bin", "ODEK_API_KEY=k1", "OPENAI_API_KEY=k2", DepthEnv + "=7", SlotsEnv + "=/inherited", TenantEnv + "=other", "HOME=/h"}, 2, "/slots", "chat")
	got := strings.Join(env, " ")
	if got != "PATH=/bin HOME=/h "+SlotsEnv+"=/slots "+TenantEnv+"=chat "+DepthEnv+"=2" {
		t.Fatalf("env %q", got)
	}
}

func FuzzParseTask(f *testing.F) {
	f.Add([]byte(`{"goal":"g","context":"c","guidance":"x","max_risk":"safe","artifact_root":"/tmp/a","budget":{"max_tool_calls":1,"cost_exhausted":true}}`))
	f.Add([]byte(`{"goal":"g","timeout_seconds":1e308}`))
	f.Add([]byte(`{"goal":"\ud800"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		task, err := ParseTask(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidTask) {
				t.Fatalf("error without ErrInvalidTask: %v", err)
			}
			return
		}
		if strings.TrimSpace(task.Goal) == "" || len(task.Goal) > MaxGoalBytes {
			t.Fatalf("accepted goal %q", task.Goal)
		}
		// A parsed budget always inherits without panicking, and an
		// exhausted one always fails with the typed error.
		l, err := task.Budget.Inherit(budget.Limits{MaxToolCalls: 3})
		if task.Budget.Exhausted() != nil && !errors.Is(err, budget.ErrExceeded) {
			t.Fatalf("exhausted budget inherited: %+v", l)
		}
		if err == nil && (l.MaxRuntime < 0 || l.MaxToolCalls < 0 || l.MaxCostUSD < 0) {
			t.Fatalf("negative limits %+v", l)
		}
	})
}

func FuzzParseTasks(f *testing.F) {
	f.Add([]byte(`{"tasks":[{"goal":"a"},{"goal":"b","max_risk":"local_write"}]}`))
	f.Add([]byte(`{"tasks":[{}]}`))
	f.Add([]byte(`{"tasks":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ts, err := ParseTasks(raw)
		if err != nil {
			return
		}
		if len(ts) < 1 || len(ts) > MaxTasks {
			t.Fatalf("accepted %d tasks", len(ts))
		}
	})
}

func TestDepthFromEnviron(t *testing.T) {
	tests := []struct {
		env     []string
		def     int
		want    int
		wantErr bool
	}{
		{nil, 0, 0, false},
		{[]string{"X=1"}, 1, 1, false},
		{[]string{DepthEnv + "=2", DepthEnv + "=5"}, 0, 2, false},
		{[]string{DepthEnv + "=-1"}, 0, 0, true},
		{[]string{DepthEnv + "=9"}, 0, 0, true},
		{[]string{DepthEnv + "=two"}, 0, 0, true},
	}
	for _, tt := range tests {
		got, err := DepthFromEnviron(tt.env, tt.def)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%v: %d %v", tt.env, got, err)
		}
	}
}
