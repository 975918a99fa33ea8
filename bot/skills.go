package bot

import (
	"context"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/odekrun/odek/internal/skills"
)

// The operator's Agent Skills as chat commands (issue 28): each skill of
// Config.Skills is a /command in the menu, and "/<command> rest" runs as a
// job of the chat like any message, whose goal tells the model to use the
// skill (skills.CommandGoal). The skills themselves are read by the
// worker's skill tool; the bot only knows their names and descriptions.

// SkillCommand is one skill offered as a command (skills.Command).
type SkillCommand = skills.Command

// skillCommand starts the job of a skill command; false when m's command
// names no skill. It runs in the chat's actor.
func (c *chat) skillCommand(ctx context.Context, updateID int, userID int64, userName string, m *tgbotapi.Message, group bool) bool {
	name := strings.ToLower(m.Command())
	for _, sc := range c.b.cfg.Skills {
		if sc.Command != name {
			continue
		}
		r := jobRequest{updateID: updateID, chatID: c.id, userID: userID, userName: userName,
			text: skills.CommandGoal(sc.Skill, m.CommandArguments()), group: group, srcMsg: m.MessageID}
		if group {
			r.replyTo = m.MessageID
		}
		c.startJob(ctx, r)
		return true
	}
	return false
}

// skillMenu is the menu entries of Config.Skills.
func (b *Bot) skillMenu() []tgbotapi.BotCommand {
	out := make([]tgbotapi.BotCommand, 0, len(b.cfg.Skills))
	for _, sc := range b.cfg.Skills {
		out = append(out, tgbotapi.BotCommand{Command: sc.Command, Description: sc.Description})
	}
	return out
}

// BuiltinCommands are the commands the bot answers itself (with or
// without schedules): skill commands must not take their names.
func BuiltinCommands() []string {
	var out []string
	for _, cs := range [][]tgbotapi.BotCommand{commands, scheduleCommands} {
		for _, c := range cs {
			out = append(out, c.Command)
		}
	}
	return append(out, "schedules") // /schedule's alias, not in the menu
}
