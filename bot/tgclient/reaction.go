package tgclient

import (
	"context"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// ReactionEmoji are the emoji a ReactionTypeEmoji may carry
// (https://core.telegram.org/bots/api#reactiontypeemoji, "Currently, it
// can be one of …"); Telegram refuses others with REACTION_INVALID.
var ReactionEmoji = []string{"👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩", "🙏",
	"👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳", "❤\u200d🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓", "🍾", "💋",
	"🖕", "😈", "😴", "😭", "🤓", "👻", "👨\u200d💻", "👀", "🎃", "🙈", "😇", "😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄", "☃", "💅",
	"🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾", "🤷\u200d♂", "🤷", "🤷\u200d♀", "😡"}

// SetReaction sets the bot's reaction on a message with
// setMessageReaction (a raw call: the library has no wrapper), once,
// after the global send rate: chat_id, message_id and reaction, a
// JSON list of one ReactionTypeEmoji.
func (t *Client) SetReaction(ctx context.Context, chatID int64, msgID int, emoji string) (Kind, error) {
	if err := t.lim.Wait(ctx); err != nil {
		return Canceled, err
	}
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(chatID, 10), "message_id": strconv.Itoa(msgID)}
	if err := p.AddInterface("reaction", []map[string]string{{"type": "emoji", "emoji": emoji}}); err != nil {
		return Permanent, err
	}
	_, err := t.Raw(ctx, "setMessageReaction", p)
	kind, _ := Classify(err)
	return kind, err
}
