package bot

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/internal/skills"
	"github.com/odekrun/odek/queue"
)

// An operator's skill is a command in the menu, and "/<command> rest" is
// a job of the chat whose goal tells the model to use the skill; a
// command that names no skill is still answered as unknown.
func TestSkillCommands(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.Skills = []SkillCommand{{Command: "pdf_report", Description: "Turn notes into a PDF report", Skill: "pdf-report"}}
	})
	var mu sync.Mutex
	var goals []string
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		mu.Lock()
		goals = append(goals, l.Job.Goal)
		mu.Unlock()
		return queue.Result{Answer: "report ready"}
	})
	h.tg.UserMessage(alice, alice, "/pdf_report the sales figures of May")
	h.waitVisible(alice, "report ready")
	mu.Lock()
	if len(goals) != 1 || goals[0] != skills.CommandGoal("pdf-report", "the sales figures of May") {
		t.Fatalf("goals: %q", goals)
	}
	mu.Unlock()
	if cmds := h.tg.Commands(); !strings.Contains(cmds, `"command":"pdf_report"`) || !strings.Contains(cmds, "Turn notes into a PDF report") || !strings.Contains(cmds, `"command":"status"`) {
		t.Fatalf("setMyCommands: %s", cmds)
	}
	h.tg.UserMessage(alice, alice, "/pdf_reportx")
	h.waitVisible(alice, tr("en", "unknown"))
	mu.Lock()
	defer mu.Unlock()
	if len(goals) != 1 {
		t.Fatalf("an unknown command became a job: %q", goals)
	}
}

// Skill commands never take a built-in command's name.
func TestBuiltinCommandsListsEveryBuiltin(t *testing.T) {
	got := BuiltinCommands()
	for _, c := range append(slices.Clone(commands), scheduleCommands...) {
		if !slices.Contains(got, c.Command) {
			t.Errorf("%s missing", c.Command)
		}
	}
}
