package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/plan"
)

var update = flag.Bool("update", false, "rewrite golden files")

func mustParse(t *testing.T, js string) plan.Args {
	t.Helper()
	a, err := plan.ParseArgs([]byte(js), 0)
	if err != nil {
		t.Fatalf("ParseArgs(%s): %v", js, err)
	}
	return a
}

func TestVersionRules(t *testing.T) {
	create := `{"verb":"create","steps":[{"id":"a","title":"read"},{"id":"b","title":"fix"},{"id":"c","title":"test"}]}`
	tests := []struct {
		name        string
		calls       []string
		wantVersion int
		wantBumps   []bool
	}{
		{"create starts at 1", []string{create}, 1, []bool{true}},
		{"get is no change", []string{create, `{"verb":"get"}`}, 1, []bool{true, false}},
		{"status change bumps", []string{create, `{"verb":"update","updates":[{"id":"a","status":"in_progress"}]}`}, 2, []bool{true, true}},
		{"same status is a no-op", []string{create, `{"verb":"update","updates":[{"id":"a","status":"pending"}]}`}, 1, []bool{true, false}},
		{"note-only update bumps", []string{create, `{"verb":"update","updates":[{"id":"a","note":"half way"}]}`}, 2, []bool{true, true}},
		{"same note is a no-op", []string{create, `{"verb":"update","updates":[{"id":"a","note":"n"}]}`, `{"verb":"update","updates":[{"id":"a","note":"n"}]}`}, 2, []bool{true, true, false}},
		{"complete bumps once", []string{create, `{"verb":"complete","step_id":"b"}`, `{"verb":"complete","step_id":"b"}`}, 2, []bool{true, true, false}},
		{"multi update is one bump", []string{create, `{"verb":"update","updates":[{"id":"a","status":"done"},{"id":"b","status":"in_progress","note":"x"}]}`}, 2, []bool{true, true}},
		{"replace bumps", []string{create, `{"verb":"create","steps":[{"id":"z","title":"other"}]}`}, 2, []bool{true, true}},
		{"identical re-create is a no-op", []string{create, create}, 1, []bool{true, false}},
		{"re-create after progress bumps (resets statuses)", []string{create, `{"verb":"complete","step_id":"a"}`, create}, 3, []bool{true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s plan.State
			for i, c := range tt.calls {
				next, ch, err := s.Apply(mustParse(t, c))
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if ch.Bumped != tt.wantBumps[i] {
					t.Errorf("call %d (%s): bumped %v, want %v", i, c, ch.Bumped, tt.wantBumps[i])
				}
				if ch.Bumped && next.Version != s.Version+1 || !ch.Bumped && next.Version != s.Version {
					t.Errorf("call %d: version %d → %d with bumped=%v", i, s.Version, next.Version, ch.Bumped)
				}
				s = next
			}
			if s.Version != tt.wantVersion {
				t.Errorf("version %d, want %d", s.Version, tt.wantVersion)
			}
		})
	}
}

func TestApplyErrorsLeaveStateUnchanged(t *testing.T) {
	var s plan.State
	if _, _, err := s.Apply(mustParse(t, `{"verb":"complete","step_id":"a"}`)); !errors.Is(err, plan.ErrNoPlan) {
		t.Fatalf("complete before create: %v, want ErrNoPlan", err)
	}
	s, _, _ = s.Apply(mustParse(t, `{"verb":"create","steps":[{"id":"a","title":"one"},{"id":"b","title":"two"}]}`))
	// The second update names an unknown step: nothing of the first applies.
	next, ch, err := s.Apply(mustParse(t, `{"verb":"update","updates":[{"id":"a","status":"done"},{"id":"nope","status":"done"}]}`))
	if !errors.Is(err, plan.ErrUnknownStep) || !strings.Contains(err.Error(), `"a", "b"`) {
		t.Fatalf("unknown step: %v, want ErrUnknownStep listing the ids", err)
	}
	if ch.Bumped || next.Version != 1 || next.Steps[0].Status != plan.Pending {
		t.Fatalf("atomicity broken: %+v %+v", ch, next)
	}
	if s.Steps[0].Status != plan.Pending {
		t.Fatal("Apply modified its receiver")
	}
}

func TestParseArgsErrorsSayWhatIsExpected(t *testing.T) {
	long := strings.Repeat("x", plan.MaxTitleChars+1)
	tests := []struct{ args, want string }{
		{`[]`, "want a JSON object"},
		{`{}`, `missing "verb"`},
		{`{"verb":"explode"}`, "want one of create, update, complete, get"},
		{`{"verb":"create"}`, `"steps": 1 to 30`},
		{`{"verb":"create","steps":[{"id":"a"}]}`, `want both "id" and "title"`},
		{`{"verb":"create","steps":[{"id":"a b","title":"t"}]}`, "ASCII letters"},
		{`{"verb":"create","steps":[{"id":"a","title":"t"},{"id":"a","title":"u"}]}`, "used twice"},
		{`{"verb":"create","steps":[{"id":"a","title":"` + long + `"}]}`, "201 characters, limit 200"},
		{`{"verb":"create","steps":[{"id":"a","title":"two\nlines"}]}`, "single line"},
		{`{"verb":"update","updates":[{"id":"a"}]}`, `"status" and/or "note"`},
		{`{"verb":"update","updates":[{"id":"a","status":"finished"}]}`, "want pending, in_progress, done or blocked"},
		{`{"verb":"update","updates":[{"id":"a","note":"x"},{"id":"a","note":"y"}]}`, "appears twice"},
		{`{"verb":"complete"}`, `"step_id"`},
		{`{"verb":"create","steps":[{"id":"a","title":1}]}`, "steps[0]"},
	}
	for _, tt := range tests {
		_, err := plan.ParseArgs([]byte(tt.args), 0)
		if !errors.Is(err, plan.ErrInvalidArgs) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseArgs(%s) = %v, want ErrInvalidArgs containing %q", tt.args, err, tt.want)
		}
	}
	// Unknown fields are ignored (additive rule).
	if _, err := plan.ParseArgs([]byte(`{"verb":"get","future":1}`), 0); err != nil {
		t.Errorf("unknown field rejected: %v", err)
	}
}

// TestEventSequenceGolden drives the tool through a realistic session and
// compares the events it emits with testdata/events.golden.jsonl.
func TestEventSequenceGolden(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	tool := plan.NewTool(plan.Options{Emit: func(_ context.Context, typ events.Type, data map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(struct {
			Type events.Type    `json:"type"`
			Data map[string]any `json:"data"`
		}{typ, data})
		buf.Write(append(b, '\n'))
	}})
	calls := []string{
		`{"verb":"get"}`,
		`{"verb":"create","steps":[{"id":"s1","title":"secret title one"},{"id":"s2","title":"two"},{"id":"s3","title":"three"},{"id":"s4","title":"four"}]}`,
		`{"verb":"update","updates":[{"id":"s1","status":"in_progress"}]}`,
		`{"verb":"update","updates":[{"id":"s1","note":"secret note"}]}`,
		`{"verb":"update","updates":[{"id":"s1","note":"secret note"}]}`,
		`{"verb":"complete","step_id":"s1"}`,
		`{"verb":"update","updates":[{"id":"s2","status":"blocked"},{"id":"s3","status":"blocked"}]}`,
		`{"verb":"update","updates":[{"id":"s4","status":"blocked"}]}`,
		`{"verb":"update","updates":[{"id":"s2","status":"in_progress"}]}`,
		`{"verb":"update","updates":[{"id":"nope","status":"done"}]}`,
		`{"verb":"create","steps":[{"id":"n1","title":"new plan"}]}`,
	}
	for _, c := range calls {
		if _, err := tool.Assess(json.RawMessage(c)); err != nil {
			t.Fatalf("Assess(%s): %v", c, err)
		}
		if _, err := tool.Run(context.Background(), json.RawMessage(c)); err != nil {
			t.Fatalf("Run(%s): %v", c, err)
		}
	}
	got := buf.Bytes()
	if bytes.Contains(got, []byte("secret")) || bytes.Contains(got, []byte("iteration")) {
		t.Fatalf("plan events leak titles/notes or carry an iteration:\n%s", got)
	}
	golden := filepath.Join("testdata", "events.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("events differ from %s (run with -update to accept):\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestToolResultsAndBlock(t *testing.T) {
	tool := plan.NewTool(plan.Options{})
	if tool.Block() != "" {
		t.Fatal("block before create must be empty")
	}
	res, _ := tool.Run(context.Background(), json.RawMessage(`{"verb":"update","updates":[{"id":"a","status":"done"}]}`))
	if !res.IsError || !strings.Contains(res.Text, "create") {
		t.Fatalf("update before create: %+v", res)
	}
	tool.Run(context.Background(), json.RawMessage(`{"verb":"create","steps":[{"id":"a","title":"Read code"},{"id":"b","title":"Fix"}]}`))
	tool.Run(context.Background(), json.RawMessage(`{"verb":"update","updates":[{"id":"a","status":"done"},{"id":"b","status":"in_progress","note":"`+strings.Repeat("n", 300)+`"}]}`))
	block := tool.Block()
	for _, want := range []string{"[odek plan v2: 2 steps — 1 done, 1 in progress, 0 blocked, 0 pending", "[x] a: Read code", "[>] b: Fix — nnn", "…"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
	get, _ := tool.Run(context.Background(), json.RawMessage(`{"verb":"get"}`))
	if !strings.Contains(get.Text, strings.Repeat("n", 300)) {
		t.Error("get must show the full note")
	}
}

func TestConcurrentUpdatesKeepVersionsGapless(t *testing.T) {
	var mu sync.Mutex
	var versions []int
	tool := plan.NewTool(plan.Options{Emit: func(_ context.Context, typ events.Type, data map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		if typ != events.PlanBlocked {
			versions = append(versions, data["version"].(int))
		}
	}})
	tool.Run(context.Background(), json.RawMessage(`{"verb":"create","steps":[{"id":"a","title":"t"}]}`))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool.Run(context.Background(), json.RawMessage(`{"verb":"update","updates":[{"id":"a","note":"n`+string(rune('a'+i))+`"}]}`))
		}()
	}
	wg.Wait()
	for i, v := range versions {
		if v != i+1 {
			t.Fatalf("versions not gapless and ordered: %v", versions)
		}
	}
	if len(versions) != 21 {
		t.Fatalf("got %d events, want 21", len(versions))
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add([]byte(`{"verb":"create","steps":[{"id":"a","title":"t"}]}`))
	f.Add([]byte(`{"verb":"update","updates":[{"id":"a","status":"blocked","note":"n"}]}`))
	f.Add([]byte(`{"verb":"complete","step_id":"a"}`))
	f.Add([]byte(`{"verb":"get","x":[1,2]}`))
	f.Add([]byte(`{"verb":"create","steps":[{"id":"a","title":"\u0000"}]}`))
	f.Add([]byte(`nonsense`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := plan.ParseArgs(raw, 0)
		if err != nil {
			if !errors.Is(err, plan.ErrInvalidArgs) {
				t.Fatalf("error does not wrap ErrInvalidArgs: %v", err)
			}
			return
		}
		// Whatever parses applies without panicking, to an empty and to a
		// non-empty plan, and a bump always moves the version by one.
		var s plan.State
		s, _, _ = s.Apply(plan.Args{Verb: plan.VerbCreate, Steps: []plan.StepArg{{ID: "a", Title: "t"}}})
		for _, st := range []plan.State{{}, s} {
			next, ch, err := st.Apply(a)
			if err == nil && ch.Bumped != (next.Version == st.Version+1) {
				t.Fatalf("version %d → %d, bumped %v", st.Version, next.Version, ch.Bumped)
			}
			_ = next.Block()
			_ = plan.Events(next, ch)
		}
	})
}
