// Package tgclient is odek-bot's Telegram Bot API client: contexts on
// every call, the global send rate, retries of 429 and transient failures,
// error classification, token scrubbing and raw method calls for methods
// the library does not wrap.
package tgclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/backoff"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"
)

// Kind classifies the outcome of a Bot API call.
type Kind int

const (
	OK           Kind = iota
	RetryAfter        // 429: wait retry_after, then retry
	Transient         // 5xx, network error, non-JSON reply: back off and retry
	NotModified       // editMessageText with the same content: nothing to do
	BadEntities       // "can't parse entities": resend as plain text
	ChatGone          // blocked, kicked, chat not found, user deactivated
	MessageGone       // message to edit/delete not found
	Conflict          // 409: another poller or a webhook
	Unauthorized      // 401: the token is wrong or revoked
	Canceled          // the context ended
	Permanent         // any other error: give up
)

func (k Kind) String() string {
	return [...]string{"ok", "retry_after", "transient", "not_modified", "bad_entities", "chat_gone",
		"message_gone", "conflict", "unauthorized", "canceled", "permanent"}[k]
}

// Classify decides what an error from the Bot API means for the caller.
// Pure: it looks only at the error's code and description.
func Classify(err error) (Kind, time.Duration) {
	if err == nil {
		return OK, 0
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Canceled, 0
	}
	var re *RedactedError
	if errors.As(err, &re) {
		return Permanent, 0
	}
	var he *HTTPStatusError
	if errors.As(err, &he) {
		if he.Status == 429 || he.Status >= 500 {
			return Transient, 0
		}
		return Permanent, 0
	}
	var te *tgbotapi.Error
	if !errors.As(err, &te) {
		return Transient, 0 // network errors, a reply that is not JSON
	}
	desc := strings.ToLower(te.Message)
	switch {
	case te.Code == 429:
		return RetryAfter, max(time.Duration(te.RetryAfter)*time.Second, time.Second)
	case te.Code >= 500:
		return Transient, 0
	case te.Code == 409:
		return Conflict, 0
	case te.Code == 401:
		return Unauthorized, 0
	case strings.Contains(desc, "message is not modified"):
		return NotModified, 0
	case strings.Contains(desc, "can't parse entities"), strings.Contains(desc, "can't find end of"):
		return BadEntities, 0
	case te.Code == 403, strings.Contains(desc, "chat not found"), strings.Contains(desc, "user is deactivated"),
		strings.Contains(desc, "bot was kicked"), strings.Contains(desc, "not enough rights to send"):
		return ChatGone, 0
	case strings.Contains(desc, "message to edit not found"), strings.Contains(desc, "message to delete not found"),
		strings.Contains(desc, "message can't be deleted"), strings.Contains(desc, "message can't be edited"):
		return MessageGone, 0
	}
	return Permanent, 0
}

// HTTPStatusError is a Bot API reply that was not JSON (a proxy's error
// page); its status decides retrying.
type HTTPStatusError struct{ Status int }

func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("bot: Bot API answered HTTP %d without a JSON body", e.Status)
}

// RedactedError replaces an error whose text quoted the bot token: the
// library builds each request URL with the token in its path, and
// http.NewRequest quotes the whole URL when it does not parse (a bad
// endpoint). Such an error is permanent: retrying cannot fix a URL.
type RedactedError struct{ msg string }

func (e *RedactedError) Error() string { return e.msg }

// Scrub returns err with every occurrence of token replaced, as a
// RedactedError, when its text contains the token; err unchanged
// otherwise (transport errors are scrubbed in place by ctxClient and
// keep their type for classify).
func Scrub(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &RedactedError{msg: strings.ReplaceAll(err.Error(), token, "<token>")}
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
	addThread(c.ctx, req) // thread.go: a forum topic's calls name it
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
		return nil, &HTTPStatusError{Status: resp.StatusCode}
	}
	return resp, nil
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error { return backoff.Sleep(ctx, d) }

// MaxTries bounds retries of one call (429 and transient failures).
const MaxTries = 6

// Client wraps the Bot API library with contexts, the global rate limit,
// retries and error classification.
type Client struct {
	base  tgbotapi.BotAPI // template copied per call with a ctxClient
	hc    *http.Client
	token string
	// endpoint is the API endpoint format ("…/bot%s/%s").
	endpoint string
	// lim is the global send rate: a token bucket shared by every chat
	// (golang.org/x/time/rate), GlobalRate sends a second with a burst of
	// the same size.
	lim *rate.Limiter
	log logrus.FieldLogger
	// maxWait caps one retry_after or backoff wait.
	maxWait time.Duration
	observe func(error) // Options.Observe; never nil
}

// Options configures Connect.
type Options struct {
	Token       string
	APIEndpoint string // tgbotapi.APIEndpoint when empty
	PollTimeout time.Duration
	GlobalRate  float64 // sends per second over all chats
	Logger      logrus.FieldLogger
	// Observe, when set, is told the outcome of every Bot API request
	// (nil error for a success; each retry counts): the bot's metrics.
	Observe func(error)
}

// Connect builds the client and checks the token with getMe, retrying
// network failures until ctx ends. A rejected token is an error at once.
func Connect(ctx context.Context, cfg Options) (*Client, error) {
	if cfg.APIEndpoint == "" {
		cfg.APIEndpoint = tgbotapi.APIEndpoint
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	if cfg.GlobalRate <= 0 {
		cfg.GlobalRate = 25
	}
	if cfg.Observe == nil {
		cfg.Observe = func(error) {}
	}
	hc := &http.Client{Timeout: cfg.PollTimeout + 30*time.Second}
	t := &Client{hc: hc, token: cfg.Token, endpoint: cfg.APIEndpoint, log: cfg.Logger, maxWait: 60 * time.Second, observe: cfg.Observe,
		lim: rate.NewLimiter(rate.Limit(cfg.GlobalRate), max(1, int(cfg.GlobalRate)))}
	for attempt := 1; ; attempt++ {
		api, err := tgbotapi.NewBotAPIWithClient(cfg.Token, cfg.APIEndpoint, ctxClient{ctx: ctx, hc: hc, token: cfg.Token})
		err = Scrub(err, cfg.Token)
		if err == nil {
			t.base = *api
			return t, nil
		}
		kind, wait := Classify(err)
		switch kind {
		case Unauthorized:
			return nil, fmt.Errorf("bot: Telegram rejected the bot token (401 Unauthorized); check TELEGRAM_BOT_TOKEN")
		case Canceled:
			return nil, ctx.Err()
		case Transient, RetryAfter:
			if wait == 0 {
				wait = Backoff(attempt, 30*time.Second)
			}
			cfg.Logger.WithError(err).WithField("retry_in", wait.String()).Warn("bot: getMe failed; retrying")
			if err := Sleep(ctx, wait); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("bot: getMe: %w", err)
		}
	}
}

// Self is the bot's own user.
func (t *Client) Self() tgbotapi.User { return t.base.Self }

// Once makes one call without retries.
func (t *Client) Once(ctx context.Context, c tgbotapi.Chattable) (*tgbotapi.APIResponse, error) {
	api := t.base
	api.Client = ctxClient{ctx: ctx, hc: t.hc, token: t.token}
	resp, err := api.Request(c)
	t.observe(err)
	return resp, Scrub(err, t.token)
}

// Call makes c, waiting for the global rate when limited, and retries 429
// (after retry_after) and transient failures (with backoff). It returns the
// last error with its classification.
func (t *Client) Call(ctx context.Context, c tgbotapi.Chattable, limited bool) (*tgbotapi.APIResponse, Kind, error) {
	return t.CallTries(ctx, c, limited, MaxTries)
}

// CallTries is Call with at most tries attempts.
func (t *Client) CallTries(ctx context.Context, c tgbotapi.Chattable, limited bool, tries int) (*tgbotapi.APIResponse, Kind, error) {
	for attempt := 1; ; attempt++ {
		if limited {
			if err := t.lim.Wait(ctx); err != nil {
				return nil, Canceled, err
			}
		}
		resp, err := t.Once(ctx, c)
		kind, wait := Classify(err)
		switch kind {
		case OK:
			return resp, OK, nil
		case RetryAfter, Transient:
			if attempt >= tries {
				return nil, kind, err
			}
			if kind == Transient {
				wait = Backoff(attempt, 30*time.Second)
			}
			wait = min(wait, t.maxWait)
			t.log.WithError(err).WithFields(logrus.Fields{"kind": kind.String(), "retry_in": wait.String(), "attempt": attempt}).Warn("bot: Telegram call failed; retrying")
			if err := Sleep(ctx, wait); err != nil {
				return nil, Canceled, err
			}
		default:
			return nil, kind, err
		}
	}
}

// Send sends a message-producing config and decodes the message.
func (t *Client) Send(ctx context.Context, c tgbotapi.Chattable) (tgbotapi.Message, Kind, error) {
	resp, kind, err := t.Call(ctx, c, true)
	if err != nil {
		return tgbotapi.Message{}, kind, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		return m, Permanent, fmt.Errorf("bot: decode sent message: %w", err)
	}
	return m, OK, nil
}

// SendFormatted sends text with parse mode mode ("MarkdownV2" or "HTML"),
// falling back to plain when Telegram rejects the entities.
func (t *Client) SendFormatted(ctx context.Context, chatID int64, mode, text, plain string, markup any) (tgbotapi.Message, Kind, error) {
	return t.SendFormattedReply(ctx, chatID, 0, mode, text, plain, markup)
}

// SendFormattedReply is SendFormatted as a reply to message replyTo (0 =
// none). A reply whose message is gone is sent as a plain message
// (allow_sending_without_reply).
func (t *Client) SendFormattedReply(ctx context.Context, chatID int64, replyTo int, mode, text, plain string, markup any) (tgbotapi.Message, Kind, error) {
	msg := tgbotapi.NewMessage(chatID, text)
	msg.ParseMode = mode
	msg.DisableWebPagePreview = true
	msg.ReplyMarkup = markup
	msg.ReplyToMessageID = replyTo
	msg.AllowSendingWithoutReply = replyTo != 0
	m, kind, err := t.Send(ctx, msg)
	if kind == BadEntities && mode != "" {
		t.log.WithError(err).WithField("chat_id", chatID).Warn("bot: Telegram rejected " + mode + "; sending plain text")
		msg.Text, msg.ParseMode = plain, ""
		m, kind, err = t.Send(ctx, msg)
	}
	return m, kind, err
}

// SendPlain sends plain text (no parse mode).
func (t *Client) SendPlain(ctx context.Context, chatID int64, text string, markup any) (tgbotapi.Message, Kind, error) {
	return t.SendPlainReply(ctx, chatID, 0, text, markup)
}

// SendPlainReply is SendPlain as a reply to message replyTo (0 = none).
func (t *Client) SendPlainReply(ctx context.Context, chatID int64, replyTo int, text string, markup any) (tgbotapi.Message, Kind, error) {
	msg := tgbotapi.NewMessage(chatID, text)
	msg.ReplyToMessageID = replyTo
	msg.AllowSendingWithoutReply = replyTo != 0
	msg.DisableWebPagePreview = true
	msg.ReplyMarkup = markup
	return t.Send(ctx, msg)
}

// EditPlain replaces a message's text; "message is not modified" counts
// as success.
func (t *Client) EditPlain(ctx context.Context, chatID int64, msgID int, text string, markup *tgbotapi.InlineKeyboardMarkup) (Kind, error) {
	return t.Edit(ctx, chatID, msgID, text, markup, MaxTries)
}

// EditStatus makes one attempt at a status edit: a status line is
// superseded within a second, so a failed one is dropped rather than
// retried ahead of the chat's replies.
func (t *Client) EditStatus(ctx context.Context, chatID int64, msgID int, text string) (Kind, error) {
	return t.Edit(ctx, chatID, msgID, text, nil, 1)
}

func (t *Client) Edit(ctx context.Context, chatID int64, msgID int, text string, markup *tgbotapi.InlineKeyboardMarkup, tries int) (Kind, error) {
	e := tgbotapi.NewEditMessageText(chatID, msgID, text)
	e.ReplyMarkup = markup
	_, kind, err := t.CallTries(ctx, e, true, tries)
	if kind == NotModified {
		return OK, nil
	}
	return kind, err
}

// Remove deletes a message; one already gone counts as success.
func (t *Client) Remove(ctx context.Context, chatID int64, msgID int) (Kind, error) {
	_, kind, err := t.Call(ctx, tgbotapi.NewDeleteMessage(chatID, msgID), false)
	if kind == MessageGone {
		return OK, nil
	}
	return kind, err
}

// Raw calls a Bot API method the library does not wrap (deleteWebhook,
// setWebhook, sendMessageDraft) once, without the rate limit or retries.
func (t *Client) Raw(ctx context.Context, method string, params tgbotapi.Params) (*tgbotapi.APIResponse, error) {
	api := t.base
	api.Client = ctxClient{ctx: ctx, hc: t.hc, token: t.token}
	resp, err := api.MakeRequest(method, params)
	t.observe(err)
	return resp, Scrub(err, t.token)
}

// FileURL is the download URL of a file path returned by getFile. It
// contains the token: never log it.
func (t *Client) FileURL(filePath string) string {
	return fmt.Sprintf(t.fileEndpoint(), t.token, filePath)
}

// fileEndpoint derives the file download endpoint from the API endpoint
// ("…/bot%s/%s" → "…/file/bot%s/%s"), as the Bot API documents for getFile.
func (t *Client) fileEndpoint() string {
	ep := t.endpoint
	if i := strings.LastIndex(ep, "/bot%s/%s"); i >= 0 {
		return ep[:i] + "/file/bot%s/%s"
	}
	return tgbotapi.FileEndpoint
}

// HTTP is the client's HTTP client, for file downloads; requests through it
// must be made with a context.
func (t *Client) HTTP() *http.Client { return t.hc }

// Backoff is the wait before retry number attempt (1-based): 0.5 s
// doubling to at most max. Pure.
func Backoff(attempt int, max time.Duration) time.Duration {
	return backoff.Delay(attempt, 500*time.Millisecond, max, 0, 0)
}

// ErrFileTooBig is a download over the caller's limit, or one Telegram
// refuses as "file is too big" (over the Bot API's 20 MB).
var ErrFileTooBig = errors.New("file is too big")

// Download fetches a file by file_id: getFile, then the file itself,
// writing at most limit bytes to w. It returns the bytes written. A file
// over limit is ErrFileTooBig (w may hold a prefix). Errors never quote
// the token (the download URL contains it).
func (t *Client) Download(ctx context.Context, fileID string, limit int64, w io.Writer) (int64, error) {
	resp, kind, err := t.Call(ctx, tgbotapi.FileConfig{FileID: fileID}, false)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "file is too big") {
			return 0, ErrFileTooBig
		}
		return 0, fmt.Errorf("getFile (%s): %w", kind, err)
	}
	var f tgbotapi.File
	if err := json.Unmarshal(resp.Result, &f); err != nil || f.FilePath == "" {
		return 0, fmt.Errorf("getFile: no file_path in the reply")
	}
	if int64(f.FileSize) > limit {
		return 0, ErrFileTooBig
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.FileURL(f.FilePath), nil)
	if err != nil {
		return 0, Scrub(err, t.token)
	}
	hr, err := t.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = strings.ReplaceAll(ue.URL, t.token, "<token>")
		}
		return 0, Scrub(err, t.token)
	}
	defer hr.Body.Close()
	if hr.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("file download: HTTP %d", hr.StatusCode)
	}
	n, err := io.Copy(w, io.LimitReader(hr.Body, limit+1))
	if err != nil {
		return n, Scrub(err, t.token)
	}
	if n > limit {
		return n, ErrFileTooBig
	}
	return n, nil
}
