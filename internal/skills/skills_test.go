package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillMD(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\nbody of " + name + "\n"
}

func TestUpstreamExamplesLoad(t *testing.T) {
	set, warns := Load(Options{OperatorDirs: []string{"testdata/upstream"}})
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	if set.Len() != 3 {
		t.Fatalf("%d skills, want 3", set.Len())
	}
	pdf, ok := set.Get("pdf-forms")
	if !ok || !strings.HasPrefix(pdf.Description, "Fill in PDF forms") || strings.Contains(pdf.Description, "\n  ") {
		t.Fatalf("pdf-forms: %+v", pdf.Meta)
	}
	if pdf.License != "Apache-2.0" || pdf.Metadata["version"] != "1.2" || pdf.AllowedTools != "Bash(python3:*) Read" || !strings.Contains(pdf.Body, "# Filling PDF forms") {
		t.Fatalf("pdf-forms fields: %+v", pdf.Meta)
	}
	cl, _ := set.Get("changelog-writer")
	if cl.AllowedTools != "Bash(git log:*) Read" || !strings.Contains(cl.Description, "\nUse for release") {
		t.Fatalf("changelog-writer: %+v", cl.Meta)
	}
	bv, _ := set.Get("brand-voice") // CRLF file, quoted description
	if bv.Description != "Keeps texts in the company's voice: short sentences, no jargon." || !strings.HasPrefix(bv.Body, "Write as if") {
		t.Fatalf("brand-voice: %+v %q", bv.Meta, bv.Body)
	}
	for _, sk := range set.List() {
		if sk.Source != SourceOperator || !filepath.IsAbs(sk.Dir) && !strings.HasPrefix(sk.Dir, "testdata") {
			t.Fatalf("%s: source %s dir %s", sk.Name, sk.Source, sk.Dir)
		}
	}
}

func TestInvalidSkillsSkipped(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good/SKILL.md"), skillMD("good", "fine"))
	write(t, filepath.Join(dir, "mismatch/SKILL.md"), skillMD("other", "x"))
	write(t, filepath.Join(dir, "nodesc/SKILL.md"), "---\nname: nodesc\n---\nx")
	write(t, filepath.Join(dir, "Bad_Name/SKILL.md"), skillMD("Bad_Name", "x"))
	write(t, filepath.Join(dir, "nofm/SKILL.md"), "# just markdown\n")
	write(t, filepath.Join(dir, "nodir.md"), "not a skill")
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	set, warns := Load(Options{OperatorDirs: []string{dir}})
	if set.Len() != 1 {
		t.Fatalf("%d skills loaded: %v", set.Len(), set.List())
	}
	joined := strings.Join(warns, "\n")
	for _, want := range []string{"differs from its directory", "description is required", "may hold only a-z", "no front matter"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning %q in:\n%s", want, joined)
		}
	}
	if len(warns) != 4 {
		t.Errorf("%d warnings, want 4: %v", len(warns), warns)
	}
}

// A skill reached through a symlink that leaves the allowed directory is
// ignored, and a file of a skill that links out of it is not read.
func TestSymlinkOutsideIgnored(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "evil/SKILL.md"), skillMD("evil", "should not load"))
	write(t, filepath.Join(outside, "secret.txt"), "TOP SECRET")
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(dir, "evil")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "ok/SKILL.md"), skillMD("ok", "fine"))
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "ok/link.txt"))
	os.Symlink(filepath.Join(outside, "evil/SKILL.md"), filepath.Join(dir, "ok2"))
	set, warns := Load(Options{OperatorDirs: []string{dir}})
	if _, ok := set.Get("evil"); ok {
		t.Fatal("a skill outside the directory was loaded through a symlink")
	}
	if !strings.Contains(strings.Join(warns, "\n"), "evil") {
		t.Errorf("no warning for the escaping skill: %v", warns)
	}
	if _, err := set.ReadFile("ok", "link.txt"); err == nil {
		t.Fatal("a file outside the skill was read through a symlink")
	}
	for _, p := range []string{"../ok/SKILL.md", "/etc/passwd", "a/../../x"} {
		if _, err := set.ReadFile("ok", p); err == nil {
			t.Errorf("path %q was read", p)
		}
	}
	if files, _ := set.Files("ok"); len(files) != 0 {
		t.Errorf("Files lists links: %v", files)
	}
}

func TestProjectSkillsNeedOperator(t *testing.T) {
	op, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(op, "shared/SKILL.md"), skillMD("shared", "operator's"))
	write(t, filepath.Join(proj, ".odek/skills/shared/SKILL.md"), skillMD("shared", "project's"))
	write(t, filepath.Join(proj, ".odek/skills/local/SKILL.md"), skillMD("local", "project only"))
	home := filepath.Dir(op)
	opDirs := fmt.Sprintf(`{"skills":{"dirs":[%q]}}`, op)

	o, err := FromConfig(json.RawMessage(opDirs), home, proj)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := Load(o)
	if _, ok := set.Get("local"); ok || set.Len() != 1 {
		t.Fatalf("project skills loaded without the operator's consent: %v", set.List())
	}
	o, err = FromConfig(json.RawMessage(fmt.Sprintf(`{"skills":{"dirs":[%q],"allow_project":true}}`, op)), home, proj)
	if err != nil {
		t.Fatal(err)
	}
	set, warns := Load(o)
	if sk, _ := set.Get("shared"); sk.Source != SourceOperator || sk.Description != "operator's" {
		t.Fatalf("the project's skill replaced the operator's: %+v", sk)
	}
	if sk, ok := set.Get("local"); !ok || sk.Source != SourceProject {
		t.Fatalf("allowed project skill missing: %v", set.List())
	}
	if !strings.Contains(strings.Join(warns, "\n"), "has the name") {
		t.Errorf("no warning for the shadowed project skill: %v", warns)
	}
	for _, bad := range []string{`{"skills":{"allow_project":true,"project_dirs":["/etc"]}}`, `{"skills":{"allow_project":true,"project_dirs":["../x"]}}`, `{"skills":{"prompt_budget_chars":-1}}`} {
		if _, err := FromConfig(json.RawMessage(bad), home, proj); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	o, _ = FromConfig(nil, home, proj)
	if len(o.OperatorDirs) != 1 || o.OperatorDirs[0] != filepath.Join(home, "skills") || o.AllowProject {
		t.Errorf("defaults: %+v", o)
	}
	o, _ = FromConfig(json.RawMessage(`{"skills":{"enabled":false}}`), home, proj)
	if len(o.OperatorDirs) != 0 {
		t.Errorf("disabled: %+v", o)
	}
}

func TestPromptBudget(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		n := fmt.Sprintf("s%02d", i)
		write(t, filepath.Join(dir, n, "SKILL.md"), skillMD(n, strings.Repeat("d", 100)))
	}
	set, _ := Load(Options{OperatorDirs: []string{dir}, PromptBudget: 1000})
	p := set.Prompt()
	if len(p) > 1000+200 || !strings.Contains(p, "more skills not listed") || !strings.Contains(p, "- s00:") {
		t.Fatalf("prompt (%d chars):\n%s", len(p), p)
	}
	empty, _ := Load(Options{})
	if empty.Prompt() != "" {
		t.Fatal("empty set has a prompt")
	}
}

func TestCommands(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", 40)
	write(t, filepath.Join(dir, long, "SKILL.md"), skillMD(long, "too long a name"))
	write(t, filepath.Join(dir, "pdf-forms/SKILL.md"), skillMD("pdf-forms", strings.Repeat("w ", 300)))
	write(t, filepath.Join(dir, "start/SKILL.md"), skillMD("start", "clashes with /start"))
	for i := range 120 {
		n := fmt.Sprintf("z%03d", i)
		write(t, filepath.Join(dir, n, "SKILL.md"), skillMD(n, "x"))
	}
	set, _ := Load(Options{OperatorDirs: []string{dir}})
	cmds := set.Commands([]string{"start", "help"}, 0)
	if len(cmds) != MaxMenuCommands-2 {
		t.Fatalf("%d commands", len(cmds))
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		if c.Command == "start" || len(c.Command) > MaxCommandLen || seen[c.Command] || len([]rune(c.Description)) > MaxCommandDescription {
			t.Fatalf("bad command %+v", c)
		}
		seen[c.Command] = true
	}
	if !seen["pdf_forms"] {
		t.Fatal("pdf-forms not mapped to pdf_forms")
	}
	if g := CommandGoal("pdf-forms", " fill in.pdf "); !strings.Contains(g, "pdf-forms") || !strings.HasSuffix(g, "fill in.pdf") {
		t.Fatal(g)
	}
}

func BenchmarkLoad50(b *testing.B) {
	dir := b.TempDir()
	for i := range 50 {
		n := fmt.Sprintf("s%02d", i)
		os.MkdirAll(filepath.Join(dir, n), 0o755)
		os.WriteFile(filepath.Join(dir, n, "SKILL.md"), []byte(skillMD(n, strings.Repeat("describe ", 20))+strings.Repeat("body line\n", 200)), 0o644)
	}
	b.ReportAllocs()
	for b.Loop() {
		set, _ := Load(Options{OperatorDirs: []string{dir}})
		if set.Len() != 50 {
			b.Fatal(set.Len())
		}
	}
}
