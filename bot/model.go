package bot

import (
	"context"
	"slices"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// jobModel is the model a new job of the chat asks for: the /model choice
// while the operator still offers it, else "" (the workers' default).
func (c *chat) jobModel() string {
	if c.model != "" && slices.Contains(c.b.cfg.Models, c.model) {
		return c.model
	}
	return ""
}

// modelData is the callback data of a /model button: "md:<index>" into
// Config.Models (model names may be longer than Telegram's 64 bytes).
func modelData(i int) string { return "md:" + strconv.Itoa(i) }

// parseModelData is the inverse of modelData. Pure; the data is untrusted.
func parseModelData(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "md:")
	if !ok || rest == "" || len(rest) > 4 {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}

// chooseModel answers /model: without an argument the current model and a
// button per offered model; with a name it sets the chat's model
// ("default" clears it). It runs in the chat's actor.
func (c *chat) chooseModel(ctx context.Context, lang, arg string) {
	models := c.b.cfg.Models
	if len(models) == 0 {
		c.reply(ctx, tr(lang, "model.none"))
		return
	}
	switch arg = strings.TrimSpace(arg); {
	case arg == "":
		cur := c.jobModel()
		if cur == "" {
			cur = tr(lang, "model.default")
		}
		var rows [][]tgbotapi.InlineKeyboardButton
		for i, m := range models {
			label := m
			if m == c.jobModel() {
				label = "✅ " + m
			}
			rows = append(rows, tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData(oneLine(label, 60), modelData(i))))
		}
		_, kind, err := c.b.tg.SendPlain(ctx, c.id, tr(lang, "model.list", cur), tgbotapi.NewInlineKeyboardMarkup(rows...))
		c.checkSend(ctx, kind, err)
	case strings.EqualFold(arg, "default"):
		c.model = ""
		c.reply(ctx, tr(lang, "model.reset"))
	case slices.Contains(models, arg):
		c.model = arg
		c.reply(ctx, tr(lang, "model.set", arg))
	default:
		c.reply(ctx, tr(lang, "model.unknown", oneLine(arg, 60), strings.Join(models, ", ")))
	}
}

// pressModel handles a /model button. In groups with admin-only /model
// the press is checked like the command.
func (c *chat) pressModel(ctx context.Context, cq *tgbotapi.CallbackQuery, lang string, i int) {
	b := c.b
	if i >= len(b.cfg.Models) {
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.unknown"), false)
		return
	}
	if c.id < 0 && slices.Contains(b.cfg.AdminCommands, "model") && !b.isAdmin(ctx, c.id, cq.From.ID) {
		b.answerCallback(ctx, cq.ID, tr(lang, "admins.only", "model"), true)
		return
	}
	c.model = b.cfg.Models[i]
	text := tr(lang, "model.set", c.model)
	b.answerCallback(ctx, cq.ID, text, false)
	if kind, err := b.tg.EditPlain(ctx, c.id, cq.Message.MessageID, text, nil); kind != tgOK && kind != tgMessageGone {
		c.checkSend(ctx, kind, err)
	}
}
