package bot

import (
	"context"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/bot/tgformat"
)

// The Telegram client lives in bot/tgclient; these names keep the
// router's code short.
type tgKind = tgclient.Kind

const (
	tgOK           = tgclient.OK
	tgRetryAfter   = tgclient.RetryAfter
	tgTransient    = tgclient.Transient
	tgNotModified  = tgclient.NotModified
	tgBadEntities  = tgclient.BadEntities
	tgChatGone     = tgclient.ChatGone
	tgMessageGone  = tgclient.MessageGone
	tgConflict     = tgclient.Conflict
	tgUnauthorized = tgclient.Unauthorized
	tgCanceled     = tgclient.Canceled
	tgPermanent    = tgclient.Permanent
)

func classify(err error) (tgKind, time.Duration) { return tgclient.Classify(err) }

func sleep(ctx context.Context, d time.Duration) error { return tgclient.Sleep(ctx, d) }

// connect opens the Bot API client with the bot's configuration.
// m, when set, counts every request for /metrics.
func connect(ctx context.Context, cfg Config, m *botMetrics) (*tgclient.Client, error) {
	return tgclient.Connect(ctx, tgclient.Options{Token: cfg.Token, APIEndpoint: cfg.APIEndpoint,
		PollTimeout: cfg.PollTimeout, GlobalRate: cfg.GlobalRate, Logger: cfg.Logger, Observe: m.observe})
}

// sendChunk sends one formatted chunk with the plain-text fallback.
func (b *Bot) sendChunk(ctx context.Context, chatID int64, replyTo int, c tgformat.Chunk, markup any) (tgbotapi.Message, tgKind, error) {
	return b.tg.SendFormattedReply(ctx, chatID, replyTo, tgformat.Mode, c.HTML, c.Plain, markup)
}
