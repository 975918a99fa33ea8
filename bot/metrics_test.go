package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/odekrun/odek/bot/tgclient"
)

func TestErrorCode(t *testing.T) {
	for err, want := range map[error]string{
		&tgbotapi.Error{Code: 429, Message: "Too Many Requests: retry after 3"}:                  "429",
		fmt.Errorf("send: %w", &tgbotapi.Error{Code: 403, Message: "Forbidden: bot was kicked"}): "403",
		&tgclient.HTTPStatusError{Status: 502}:                                                   "502",
		context.DeadlineExceeded:                                                                 "canceled",
		errors.New("dial tcp 149.154.167.220:443: i/o timeout"):                                  "network",
	} {
		if got := errorCode(err); got != want {
			t.Errorf("errorCode(%v) = %q, want %q", err, got, want)
		}
	}
}

// The bot's /metrics (next to /healthz) carries the Bot API series.
func TestBotMetricsEndpoint(t *testing.T) {
	b := &Bot{}
	b.metrics.observe(nil)
	b.metrics.observe(&tgbotapi.Error{Code: 429})
	b.metrics.observe(&tgbotapi.Error{Code: 429})
	(*botMetrics)(nil).observe(errors.New("not counted, no panic"))
	rec := httptest.NewRecorder()
	b.HealthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{"odek_bot_telegram_requests_total 3\n", `odek_bot_telegram_errors_total{code="429"} 2` + "\n", "go_goroutines "} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}
