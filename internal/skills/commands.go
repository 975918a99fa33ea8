package skills

import (
	"strings"
	"unicode/utf8"
)

// Telegram's limits on a bot's command menu (setMyCommands).
const (
	MaxMenuCommands       = 100
	MaxCommandLen         = 32
	MaxCommandDescription = 256
)

// Command is one chat command mapped to a skill.
type Command struct {
	// Command is the command without '/': the skill's name with '-' as
	// '_' (Telegram allows a-z, 0-9 and '_').
	Command     string
	Description string
	Skill       string
}

// CommandName maps a skill name to a command ("" when it cannot be one:
// longer than MaxCommandLen).
func CommandName(skill string) string {
	c := strings.ReplaceAll(skill, "-", "_")
	if len(c) > MaxCommandLen {
		return ""
	}
	return c
}

// Commands maps the set's skills to chat commands within Telegram's menu
// limits: names the bot already uses (taken, without '/') are skipped, as
// are skills whose name is too long; descriptions are clipped to
// MaxCommandDescription; at most max commands (0 or above
// MaxMenuCommands ⇒ MaxMenuCommands, minus len(taken)). A pure function.
func (s *Set) Commands(taken []string, max int) []Command {
	if max <= 0 || max > MaxMenuCommands {
		max = MaxMenuCommands
	}
	max -= len(taken)
	used := make(map[string]bool, len(taken))
	for _, t := range taken {
		used[t] = true
	}
	var out []Command
	for _, sk := range s.List() {
		if len(out) >= max {
			break
		}
		c := CommandName(sk.Name)
		if c == "" || used[c] {
			continue
		}
		used[c] = true
		d := oneLine(sk.Description)
		if utf8.RuneCountInString(d) > MaxCommandDescription {
			d = string([]rune(d)[:MaxCommandDescription-1]) + "…"
		}
		out = append(out, Command{Command: c, Description: d, Skill: sk.Name})
	}
	return out
}

// CommandGoal is the goal text of a chat message "/<command> rest" for
// skill: the model is told to use the skill for the rest of the message.
func CommandGoal(skill, rest string) string {
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return "Use the skill " + skill + " (read it with the skill tool first)."
	}
	return "Use the skill " + skill + " (read it with the skill tool first) for this: " + rest
}
