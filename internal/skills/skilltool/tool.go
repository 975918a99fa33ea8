// Package skilltool is the model's access to Agent Skills: the read-only
// skill tool over a skills.Set, and ForRun, the whole wiring of skills into
// one run (the prompt section and the tool). It is apart from package
// skills so front ends (the bot's command menu) can use skills without the
// agent's tool types.
package skilltool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/odekrun/odek/internal/skills"
	"github.com/odekrun/odek/internal/tools"
)

// ToolName is the skill tool's name.
const ToolName = "skill"

// Tool is the skill tool: {"name": N} returns skill N's instructions and
// the list of files beside them; {"name": N, "path": P} returns file P of
// skill N; name "?" lists every skill. It only reads (class safe).
type Tool struct{ set *skills.Set }

// NewTool is the skill tool of set.
func NewTool(set *skills.Set) *Tool { return &Tool{set: set} }

var _ tools.Tool = (*Tool)(nil)

type toolArgs struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Definition implements agent.Tool.
func (t *Tool) Definition() tools.Definition {
	return tools.Definition{
		Name:        ToolName,
		Description: "Read an Agent Skill: with name only, the skill's instructions (SKILL.md) and the list of its files; with name and path, one of those files (read-only). Name \"?\" lists all skills.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the skill's name"},"path":{"type":"string","description":"a file inside the skill's directory, relative (optional)"}},"required":["name"],"additionalProperties":false}`),
	}
}

func parseArgs(args json.RawMessage) (toolArgs, error) {
	var a toolArgs
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("skill: arguments: %v", err)
	}
	if a.Name == "" {
		return a, fmt.Errorf("skill: name is required")
	}
	return a, nil
}

// Assess implements agent.Tool: reading a skill is safe.
func (t *Tool) Assess(args json.RawMessage) (tools.Assessment, error) {
	a, err := parseArgs(args)
	if err != nil {
		return tools.Assessment{}, err
	}
	sum := map[string]any{"skill": skills.Clip(a.Name, 64)}
	if a.Path != "" {
		sum["path"] = skills.Clip(a.Path, 200)
	}
	return tools.Assessment{Class: tools.ClassSafe, Summary: sum}, nil
}

// Run implements agent.Tool.
func (t *Tool) Run(_ context.Context, args json.RawMessage) (tools.Result, error) {
	a, err := parseArgs(args)
	if err != nil {
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	if a.Name == "?" {
		var b strings.Builder
		for _, sk := range t.set.List() {
			fmt.Fprintf(&b, "- %s: %s\n", sk.Name, skills.OneLine(sk.Description))
		}
		if b.Len() == 0 {
			return tools.Result{Text: "no skills are installed"}, nil
		}
		return tools.Result{Text: b.String()}, nil
	}
	if a.Path != "" {
		text, err := t.set.ReadFile(a.Name, a.Path)
		if err != nil {
			return tools.Result{Text: err.Error(), IsError: true}, nil
		}
		return tools.Result{Text: text}, nil
	}
	sk, ok := t.set.Get(a.Name)
	if !ok {
		return tools.Result{Text: fmt.Sprintf("no skill named %q; call skill with name \"?\" for the list", skills.Clip(a.Name, 64)), IsError: true}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Skill %s\n(directory %s; its files are read-only: read them with this tool's path argument)\n\n%s", sk.Name, sk.Dir, sk.Body)
	if files, more := t.set.Files(sk.Name); len(files) > 0 {
		b.WriteString("\n\nFiles in the skill:\n")
		for _, f := range files {
			b.WriteString("- " + f + "\n")
		}
		if more {
			fmt.Fprintf(&b, "- (more than %d files; only the first are listed)\n", skills.MaxListedFiles)
		}
	}
	return tools.Result{Text: b.String()}, nil
}

// ForRun is the whole wiring of skills into one run: it loads the skills
// the operator file allows and returns the section to append to the
// system prompt (the skill list) and the skill tool; with no skills (or a
// bad section, then in warnings) it returns "" and a nil tool, so the run
// is unchanged.
func ForRun(operatorFile json.RawMessage, home, projectDir string) (promptSection string, tool tools.Tool, warnings []string) {
	o, err := skills.FromConfig(operatorFile, home, projectDir)
	if err != nil {
		return "", nil, []string{err.Error()}
	}
	set, warnings := skills.Load(o)
	if set.Len() == 0 {
		return "", nil, warnings
	}
	return set.Prompt(), NewTool(set), warnings
}
