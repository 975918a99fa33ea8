package tgclient

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/odekrun/odek/bot/bottest"
)

// Moved here from bot/decide_test.go with the client.
func TestClassify(t *testing.T) {
	tests := []struct {
		err   error
		kind  Kind
		retry time.Duration
	}{
		{nil, OK, 0},
		{&tgbotapi.Error{Code: 429, Message: "Too Many Requests: retry after 7", ResponseParameters: tgbotapi.ResponseParameters{RetryAfter: 7}}, RetryAfter, 7 * time.Second},
		{&tgbotapi.Error{Code: 429, Message: "Too Many Requests"}, RetryAfter, time.Second},
		{&tgbotapi.Error{Code: 502, Message: "Bad Gateway"}, Transient, 0},
		{&HTTPStatusError{Status: 502}, Transient, 0},
		{&HTTPStatusError{Status: 404}, Permanent, 0},
		{&url.Error{Op: "Post", URL: "x", Err: errors.New("connection refused")}, Transient, 0},
		{fmt.Errorf("wrapped: %w", context.Canceled), Canceled, 0},
		{&tgbotapi.Error{Code: 409, Message: "Conflict: terminated by other getUpdates request"}, Conflict, 0},
		{&tgbotapi.Error{Code: 401, Message: "Unauthorized"}, Unauthorized, 0},
		{&tgbotapi.Error{Code: 400, Message: "Bad Request: message is not modified: specified new message content"}, NotModified, 0},
		{&tgbotapi.Error{Code: 400, Message: "Bad Request: can't parse entities: Character '.' is reserved"}, BadEntities, 0},
		{&tgbotapi.Error{Code: 403, Message: "Forbidden: bot was blocked by the user"}, ChatGone, 0},
		{&tgbotapi.Error{Code: 403, Message: "Forbidden: user is deactivated"}, ChatGone, 0},
		{&tgbotapi.Error{Code: 400, Message: "Bad Request: chat not found"}, ChatGone, 0},
		{&tgbotapi.Error{Code: 400, Message: "Bad Request: message to edit not found"}, MessageGone, 0},
		{&tgbotapi.Error{Code: 400, Message: "Bad Request: message text is empty"}, Permanent, 0},
	}
	for _, tt := range tests {
		kind, retry := Classify(tt.err)
		if kind != tt.kind || retry != tt.retry {
			t.Errorf("Classify(%v) = %v, %v; want %v, %v", tt.err, kind, retry, tt.kind, tt.retry)
		}
	}
}

// Options.Observe hears every Bot API request, getMe at Connect aside.
func TestObserveCountsRequests(t *testing.T) {
	srv := bottest.New(t)
	var mu sync.Mutex
	var seen []error
	c, err := Connect(context.Background(), Options{Token: bottest.Token, APIEndpoint: srv.URL() + "/bot%s/%s",
		Observe: func(err error) { mu.Lock(); seen = append(seen, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Once(context.Background(), tgbotapi.NewMessage(1001, "hi")); err != nil {
		t.Fatal(err)
	}
	c.Once(context.Background(), tgbotapi.NewEditMessageText(1001, 999999, "x")) // no such message
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != nil || seen[1] == nil {
		t.Fatalf("observed %v, want a success then an error", seen)
	}
}

// Limited calls take from the global send bucket (GlobalRate a second,
// burst of the same size, at least 1); unlimited ones do not. With a rate
// of one send per 1000 s the second limited call must wait far past its
// context's deadline, which x/time/rate reports at once.
func TestGlobalRateLimitsSends(t *testing.T) {
	srv := bottest.New(t)
	c, err := Connect(context.Background(), Options{Token: bottest.Token, APIEndpoint: srv.URL() + "/bot%s/%s", GlobalRate: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	if _, kind, err := c.Call(context.Background(), tgbotapi.NewMessage(1001, "one"), true); kind != OK {
		t.Fatalf("first limited send: %v %v", kind, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, kind, _ := c.Call(ctx, tgbotapi.NewMessage(1001, "two"), true); kind != Canceled {
		t.Fatalf("second limited send within a minute: %v, want it held back (Canceled)", kind)
	}
	if _, kind, err := c.Call(context.Background(), tgbotapi.NewMessage(1001, "three"), false); kind != OK {
		t.Fatalf("unlimited send: %v %v", kind, err)
	}
	if n := len(srv.Calls("sendMessage")); n != 2 {
		t.Errorf("sendMessage calls = %d, want 2 (the held-back one never sent)", n)
	}
}
