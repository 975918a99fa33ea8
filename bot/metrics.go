package bot

import (
	"context"
	"errors"
	"strconv"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/odekrun/odek/bot/tgclient"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// botMetrics are the bot's Prometheus series (client_golang), served at
// /metrics by HealthHandler. The zero value is ready.
type botMetrics struct {
	once     sync.Once
	reg      *prometheus.Registry
	requests prometheus.Counter
	errs     *prometheus.CounterVec
}

func (m *botMetrics) init() {
	m.once.Do(func() {
		m.requests = prometheus.NewCounter(prometheus.CounterOpts{Name: "odek_bot_telegram_requests_total",
			Help: "Bot API requests sent (each retry counts)."})
		m.errs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "odek_bot_telegram_errors_total",
			Help: "Bot API requests that failed, by error code (the API's error_code or HTTP status; network, canceled)."}, []string{"code"})
		m.reg = prometheus.NewRegistry()
		m.reg.MustRegister(m.requests, m.errs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	})
}

// observe counts one Bot API request and its error, if any. Safe on nil.
func (m *botMetrics) observe(err error) {
	if m == nil {
		return
	}
	m.init()
	m.requests.Inc()
	if err != nil {
		m.errs.WithLabelValues(errorCode(err)).Inc()
	}
}

// errorCode is the label of a Bot API error. Pure.
func errorCode(err error) string {
	var te *tgbotapi.Error
	var he *tgclient.HTTPStatusError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.As(err, &te):
		return strconv.Itoa(te.Code)
	case errors.As(err, &he):
		return strconv.Itoa(he.Status)
	}
	return "network"
}

// Registry returns the bot's Prometheus registry (served at /metrics by
// HealthHandler); a caller may add its own collectors.
func (b *Bot) Registry() *prometheus.Registry {
	b.metrics.init()
	return b.metrics.reg
}
