package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/sirupsen/logrus"
)

// tgKind classifies the outcome of a Bot API call.
type tgKind int

const (
	tgOK           tgKind = iota
	tgRetryAfter          // 429: wait retry_after, then retry
	tgTransient           // 5xx, network error, non-JSON reply: back off and retry
	tgNotModified         // editMessageText with the same content: nothing to do
	tgBadEntities         // "can't parse entities": resend as plain text
	tgChatGone            // blocked, kicked, chat not found, user deactivated
	tgMessageGone         // message to edit/delete not found
	tgConflict            // 409: another poller or a webhook
	tgUnauthorized        // 401: the token is wrong or revoked
	tgCanceled            // the context ended
	tgPermanent           // any other error: give up
)

func (k tgKind) String() string {
	return [...]string{"ok", "retry_after", "transient", "not_modified", "bad_entities", "chat_gone",
		"message_gone", "conflict", "unauthorized", "canceled", "permanent"}[k]
}

// classify decides what an error from the Bot API means for the caller.
// Pure: it looks only at the error's code and description.
func classify(err error) (tgKind, time.Duration) {
	if err == nil {
		return tgOK, 0
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return tgCanceled, 0
	}
	var re *redactedError
	if errors.As(err, &re) {
		return tgPermanent, 0
	}
	var he *httpStatusError
	if errors.As(err, &he) {
		if he.status == 429 || he.status >= 500 {
			return tgTransient, 0
		}
		return tgPermanent, 0
	}
	var te *tgbotapi.Error
	if !errors.As(err, &te) {
		return tgTransient, 0 // network errors, a reply that is not JSON
	}
	desc := strings.ToLower(te.Message)
	switch {
	case te.Code == 429:
		return tgRetryAfter, max(time.Duration(te.RetryAfter)*time.Second, time.Second)
	case te.Code >= 500:
		return tgTransient, 0
	case te.Code == 409:
		return tgConflict, 0
	case te.Code == 401:
		return tgUnauthorized, 0
	case strings.Contains(desc, "message is not modified"):
		return tgNotModified, 0
	case strings.Contains(desc, "can't parse entities"), strings.Contains(desc, "can't find end of"):
		return tgBadEntities, 0
	case te.Code == 403, strings.Contains(desc, "chat not found"), strings.Contains(desc, "user is deactivated"),
		strings.Contains(desc, "bot was kicked"), strings.Contains(desc, "not enough rights to send"):
		return tgChatGone, 0
	case strings.Contains(desc, "message to edit not found"), strings.Contains(desc, "message to delete not found"),
		strings.Contains(desc, "message can't be deleted"), strings.Contains(desc, "message can't be edited"):
		return tgMessageGone, 0
	}
	return tgPermanent, 0
}

// httpStatusError is a Bot API reply that was not JSON (a proxy's error
// page); its status decides retrying.
type httpStatusError struct{ status int }

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("bot: Bot API answered HTTP %d without a JSON body", e.status)
}

// redactedError replaces an error whose text quoted the bot token: the
// library builds each request URL with the token in its path, and
// http.NewRequest quotes the whole URL when it does not parse (a bad
// endpoint). Such an error is permanent: retrying cannot fix a URL.
type redactedError struct{ msg string }

func (e *redactedError) Error() string { return e.msg }

// scrub returns err with every occurrence of token replaced, as a
// redactedError, when its text contains the token; err unchanged
// otherwise (transport errors are scrubbed in place by ctxClient and
// keep their type for classify).
func scrub(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), token, "<token>")}
}

// ctxClient binds a context to every request the library makes (it has no
// context parameter), rejects non-JSON error pages before the library tries
// to decode them, and scrubs the token from transport errors (the token is
// part of the URL).
type ctxClient struct {
	ctx   context.Context
	hc    *http.Client
	token string
}

func (c ctxClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req.WithContext(c.ctx))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = strings.ReplaceAll(ue.URL, c.token, "<token>")
		}
		return nil, err
	}
	if resp.StatusCode >= 300 && !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, &httpStatusError{status: resp.StatusCode}
	}
	return resp, nil
}

// limiter is the global send rate: a token bucket shared by every chat.
type limiter struct {
	mu    sync.Mutex
	b     bucket
	rate  float64
	burst int
	now   func() time.Time
}

// wait blocks until a token is available or ctx ends.
func (l *limiter) wait(ctx context.Context) error {
	for {
		l.mu.Lock()
		var ok bool
		var d time.Duration
		l.b, ok, d = l.b.take(l.now(), l.rate, l.burst)
		l.mu.Unlock()
		if ok {
			return nil
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxTries bounds retries of one call (429 and transient failures).
const maxTries = 6

// telegram wraps the Bot API library with contexts, the global rate limit,
// retries and error classification.
type telegram struct {
	base  tgbotapi.BotAPI // template copied per call with a ctxClient
	hc    *http.Client
	token string
	lim   *limiter
	log   logrus.FieldLogger
	// maxWait caps one retry_after or backoff wait.
	maxWait time.Duration
	m       *botMetrics // nil: not counted
}

// connect builds the client and checks the token with getMe, retrying
// network failures until ctx ends. A rejected token is an error at once.
func connect(ctx context.Context, cfg Config) (*telegram, error) {
	hc := &http.Client{Timeout: cfg.PollTimeout + 30*time.Second}
	t := &telegram{hc: hc, token: cfg.Token, log: cfg.Logger, maxWait: 60 * time.Second,
		lim: &limiter{rate: cfg.GlobalRate, burst: max(1, int(cfg.GlobalRate)), now: cfg.Now}}
	for attempt := 1; ; attempt++ {
		api, err := tgbotapi.NewBotAPIWithClient(cfg.Token, cfg.APIEndpoint, ctxClient{ctx: ctx, hc: hc, token: cfg.Token})
		err = scrub(err, cfg.Token)
		if err == nil {
			t.base = *api
			return t, nil
		}
		kind, wait := classify(err)
		switch kind {
		case tgUnauthorized:
			return nil, fmt.Errorf("bot: Telegram rejected the bot token (401 Unauthorized); check TELEGRAM_BOT_TOKEN")
		case tgCanceled:
			return nil, ctx.Err()
		case tgTransient, tgRetryAfter:
			if wait == 0 {
				wait = backoff(attempt, 30*time.Second)
			}
			cfg.Logger.WithError(err).WithField("retry_in", wait.String()).Warn("bot: getMe failed; retrying")
			if err := sleep(ctx, wait); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("bot: getMe: %w", err)
		}
	}
}

// self is the bot's own user.
func (t *telegram) self() tgbotapi.User { return t.base.Self }

// once makes one call without retries.
func (t *telegram) once(ctx context.Context, c tgbotapi.Chattable) (*tgbotapi.APIResponse, error) {
	api := t.base
	api.Client = ctxClient{ctx: ctx, hc: t.hc, token: t.token}
	resp, err := api.Request(c)
	t.m.observe(err)
	return resp, scrub(err, t.token)
}

// call makes c, waiting for the global rate when limited, and retries 429
// (after retry_after) and transient failures (with backoff). It returns the
// last error with its classification.
func (t *telegram) call(ctx context.Context, c tgbotapi.Chattable, limited bool) (*tgbotapi.APIResponse, tgKind, error) {
	return t.callTries(ctx, c, limited, maxTries)
}

// callTries is call with at most tries attempts.
func (t *telegram) callTries(ctx context.Context, c tgbotapi.Chattable, limited bool, tries int) (*tgbotapi.APIResponse, tgKind, error) {
	for attempt := 1; ; attempt++ {
		if limited {
			if err := t.lim.wait(ctx); err != nil {
				return nil, tgCanceled, err
			}
		}
		resp, err := t.once(ctx, c)
		kind, wait := classify(err)
		switch kind {
		case tgOK:
			return resp, tgOK, nil
		case tgRetryAfter, tgTransient:
			if attempt >= tries {
				return nil, kind, err
			}
			if kind == tgTransient {
				wait = backoff(attempt, 30*time.Second)
			}
			wait = min(wait, t.maxWait)
			t.log.WithError(err).WithFields(logrus.Fields{"kind": kind.String(), "retry_in": wait.String(), "attempt": attempt}).Warn("bot: Telegram call failed; retrying")
			if err := sleep(ctx, wait); err != nil {
				return nil, tgCanceled, err
			}
		default:
			return nil, kind, err
		}
	}
}

// send sends a message-producing config and decodes the message.
func (t *telegram) send(ctx context.Context, c tgbotapi.Chattable) (tgbotapi.Message, tgKind, error) {
	resp, kind, err := t.call(ctx, c, true)
	if err != nil {
		return tgbotapi.Message{}, kind, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		return m, tgPermanent, fmt.Errorf("bot: decode sent message: %w", err)
	}
	return m, tgOK, nil
}

// sendChunk sends one chunk as MarkdownV2, falling back to its plain text
// when Telegram rejects the entities.
func (t *telegram) sendChunk(ctx context.Context, chatID int64, c Chunk, markup any) (tgbotapi.Message, tgKind, error) {
	msg := tgbotapi.NewMessage(chatID, c.Markdown)
	msg.ParseMode = tgbotapi.ModeMarkdownV2
	msg.DisableWebPagePreview = true
	msg.ReplyMarkup = markup
	m, kind, err := t.send(ctx, msg)
	if kind == tgBadEntities {
		t.log.WithError(err).WithField("chat_id", chatID).Warn("bot: Telegram rejected MarkdownV2; sending plain text")
		msg.Text, msg.ParseMode = c.Plain, ""
		m, kind, err = t.send(ctx, msg)
	}
	return m, kind, err
}

// sendPlain sends plain text (no parse mode).
func (t *telegram) sendPlain(ctx context.Context, chatID int64, text string, markup any) (tgbotapi.Message, tgKind, error) {
	msg := tgbotapi.NewMessage(chatID, text)
	msg.DisableWebPagePreview = true
	msg.ReplyMarkup = markup
	return t.send(ctx, msg)
}

// editPlain replaces a message's text; "message is not modified" counts
// as success.
func (t *telegram) editPlain(ctx context.Context, chatID int64, msgID int, text string, markup *tgbotapi.InlineKeyboardMarkup) (tgKind, error) {
	return t.edit(ctx, chatID, msgID, text, markup, maxTries)
}

// editStatus makes one attempt at a status edit: a status line is
// superseded within a second, so a failed one is dropped rather than
// retried ahead of the chat's replies.
func (t *telegram) editStatus(ctx context.Context, chatID int64, msgID int, text string) (tgKind, error) {
	return t.edit(ctx, chatID, msgID, text, nil, 1)
}

func (t *telegram) edit(ctx context.Context, chatID int64, msgID int, text string, markup *tgbotapi.InlineKeyboardMarkup, tries int) (tgKind, error) {
	e := tgbotapi.NewEditMessageText(chatID, msgID, text)
	e.ReplyMarkup = markup
	_, kind, err := t.callTries(ctx, e, true, tries)
	if kind == tgNotModified {
		return tgOK, nil
	}
	return kind, err
}

// remove deletes a message; one already gone counts as success.
func (t *telegram) remove(ctx context.Context, chatID int64, msgID int) (tgKind, error) {
	_, kind, err := t.call(ctx, tgbotapi.NewDeleteMessage(chatID, msgID), false)
	if kind == tgMessageGone {
		return tgOK, nil
	}
	return kind, err
}
