package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
)

// A confined run's shell can read and run what is in the operator's
// skill directory (it lies in ODEK_HOME, which jobs are otherwise denied:
// issue 28's "files beside it readable, not writable, even under the
// sandbox"), cannot write there, and still cannot read the rest of
// ODEK_HOME.
func TestConfinedJobReadsSkillFiles(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	skill := filepath.Join(home, "skills", "tally")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: tally\ndescription: Count things.\n---\nRun count.sh.\n"), 0o644)
	os.WriteFile(filepath.Join(skill, "count.sh"), []byte("#!/bin/sh\necho skill-script-ran\n"), 0o755)
	q := func(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "shell", Arguments: `{"command":"` + q(filepath.Join(skill, "count.sh")) + `"}`}),
		llmtest.CallTools(llmtest.Call{ID: "c2", Name: "shell", Arguments: `{"command":"echo x > ` + q(filepath.Join(skill, "planted")) + `"}`}),
		llmtest.CallTools(llmtest.Call{ID: "c3", Name: "shell", Arguments: `{"command":"cat ` + q(filepath.Join(home, "config.json")) + `"}`}),
		llmtest.Reply("done"),
	)
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + home}, "run", "--confine", "--quiet", "use the tally skill")
	if out.code != 0 {
		t.Fatalf("exit %d\n%s", out.code, out.stderr)
	}
	reqs := srv.Requests()
	var results []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == llm.RoleTool {
			results = append(results, m.Content)
		}
	}
	if len(results) != 3 || !strings.Contains(results[0], "skill-script-ran") ||
		!strings.Contains(results[1], "ermission denied") || !strings.Contains(results[2], "ermission denied") {
		t.Fatalf("results: %q", results)
	}
	if _, err := os.Stat(filepath.Join(skill, "planted")); err == nil {
		t.Fatal("a confined job wrote into the skill directory")
	}
}
