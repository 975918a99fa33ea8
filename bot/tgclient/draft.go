package tgclient

import (
	"context"
	"errors"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// ErrNoDrafts is a Bot API without sendMessageDraft: the method is unknown
// (404 "method not found") or refused for the chat (drafts are for
// private chats, and some Bot API versions only for bots with forum topic
// mode).
var ErrNoDrafts = errors.New("sendMessageDraft is not available")

// SendDraft streams a partial message with sendMessageDraft (a raw call:
// the library has no wrapper), once, after the global send rate: chat_id
// (a private chat), draft_id (non-zero; changes of one id are animated)
// and text (1-4096 characters; plain, no parse mode). A Bot API that does
// not offer drafts here is ErrNoDrafts.
func (t *Client) SendDraft(ctx context.Context, chatID, draftID int64, text string) (Kind, error) {
	if err := t.lim.Wait(ctx); err != nil {
		return Canceled, err
	}
	_, err := t.Raw(ctx, "sendMessageDraft", tgbotapi.Params{
		"chat_id": strconv.FormatInt(chatID, 10), "draft_id": strconv.FormatInt(draftID, 10), "text": text})
	kind, _ := Classify(err)
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		d := strings.ToLower(te.Message)
		if te.Code == 404 || (te.Code == 400 && (strings.Contains(d, "private chat") || strings.Contains(d, "forum") || strings.Contains(d, "method"))) {
			return Permanent, errors.Join(ErrNoDrafts, err)
		}
	}
	return kind, err
}
