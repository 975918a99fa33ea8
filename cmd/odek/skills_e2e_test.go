package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Skills in $ODEK_HOME/skills reach the system prompt; the model reads a
// body and a file beside it through the skill tool; a project's skills
// are ignored unless the operator allows them.
func TestRunWithSkills(t *testing.T) {
	home, homeEnv := extOdekHome(t, `{}`)
	proj := t.TempDir()
	mk := func(dir, name, desc, body string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\n"+body), 0o644)
	}
	mk(filepath.Join(home, "skills"), "release-notes", "Write release notes from git history.", "Step 1: read notes-template.md.\n")
	os.WriteFile(filepath.Join(home, "skills", "release-notes", "notes-template.md"), []byte("## Highlights\n"), 0o644)
	mk(filepath.Join(proj, ".odek", "skills"), "project-skill", "From the repository.", "untrusted\n")

	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "s1", Name: "skill", Arguments: `{"name":"release-notes"}`}),
		llmtest.CallTools(llmtest.Call{ID: "s2", Name: "skill", Arguments: `{"name":"release-notes","path":"notes-template.md"}`}),
		llmtest.Reply("done"),
	)
	out := runOdekEnv(t, srv.URL, proj, []string{homeEnv}, "run", "write the release notes")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	sys := reqs[0].Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "- release-notes: Write release notes from git history.") {
		t.Fatalf("skill not in the system prompt: %q", sys.Content)
	}
	if strings.Contains(sys.Content, "project-skill") {
		t.Fatal("a project skill was offered without the operator's allow_project")
	}
	if c := reqs[1].LastMessage().Content; !strings.Contains(c, "Step 1: read notes-template.md.") || !strings.Contains(c, "- notes-template.md") {
		t.Fatalf("skill body: %q", c)
	}
	if c := reqs[2].LastMessage().Content; !strings.Contains(c, "## Highlights") {
		t.Fatalf("skill file: %q", c)
	}

	// odek skills list shows the operator's; with allow_project the
	// project's too.
	out = runOdekEnv(t, "http://127.0.0.1:1", proj, []string{homeEnv}, "skills", "list")
	if out.code != 0 || !strings.Contains(out.stdout, "release-notes\toperator") || strings.Contains(out.stdout, "project-skill") {
		t.Fatalf("skills list: %d %s %s", out.code, out.stdout, out.stderr)
	}
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"skills":{"allow_project":true}}`), 0o600)
	out = runOdekEnv(t, "http://127.0.0.1:1", proj, []string{homeEnv}, "skills", "list")
	if out.code != 0 || !strings.Contains(out.stdout, "project-skill\tproject") {
		t.Fatalf("skills list with allow_project: %d %s %s", out.code, out.stdout, out.stderr)
	}
	out = runOdekEnv(t, "http://127.0.0.1:1", proj, []string{homeEnv}, "skills", "show", "release-notes")
	if out.code != 0 || !strings.Contains(out.stdout, "file: notes-template.md") || !strings.Contains(out.stdout, "Step 1") {
		t.Fatalf("skills show: %d %s %s", out.code, out.stdout, out.stderr)
	}
}
