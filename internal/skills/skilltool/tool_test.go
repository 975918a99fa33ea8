package skilltool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/skills"
)

func TestTool(t *testing.T) {
	set, _ := skills.Load(skills.Options{OperatorDirs: []string{"../testdata/upstream"}})
	tool := NewTool(set)
	run := func(args string) (string, bool) {
		r, err := tool.Run(context.Background(), json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return r.Text, r.IsError
	}
	if out, isErr := run(`{"name":"pdf-forms"}`); isErr || !strings.Contains(out, "# Filling PDF forms") || !strings.Contains(out, "- scripts/fields.py") || !strings.Contains(out, "- reference.md") {
		t.Fatalf("body: %v %s", isErr, out)
	}
	if out, isErr := run(`{"name":"pdf-forms","path":"reference.md"}`); isErr || !strings.Contains(out, "checkbox") {
		t.Fatalf("file: %s", out)
	}
	if out, isErr := run(`{"name":"pdf-forms","path":"../brand-voice/SKILL.md"}`); !isErr {
		t.Fatalf("escaping path read: %s", out)
	}
	if out, isErr := run(`{"name":"?"}`); isErr || strings.Count(out, "\n") != 3 {
		t.Fatalf("list: %s", out)
	}
	if _, isErr := run(`{"name":"nope"}`); !isErr {
		t.Fatal("unknown skill not an error")
	}
	if a, err := tool.Assess(json.RawMessage(`{"name":"pdf-forms"}`)); err != nil || a.Class != "safe" {
		t.Fatalf("assess: %v %v", a, err)
	}
	if _, err := tool.Assess(json.RawMessage(`{"name":"x","mode":"w"}`)); err == nil {
		t.Fatal("unknown argument accepted")
	}
}
