package main

import (
	"context"
	"os"
	"time"

	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/sirupsen/logrus"
)

// startTracing sets tracing up for odek-bot from the OTEL_* variables
// (docs/OBSERVABILITY.md): off unless a collector is configured; spans of
// service odek-bot (the update, the enqueue, the delivery and, in embedded
// mode, the jobs its workers run). The returned func exports what is
// queued at exit, waiting at most 5 s.
func startTracing(ctx context.Context, log *logrus.Logger) (func(), error) {
	cfg, err := telemetry.FromEnv(os.LookupEnv)
	if err != nil {
		return func() {}, err
	}
	red := redact.New()
	red.AddFromEnv(os.Environ())
	p, err := telemetry.Setup(ctx, cfg, telemetry.Options{Service: "odek-bot", Redactor: red})
	if err != nil || p == nil {
		return func() {}, err
	}
	log.AddHook(telemetry.LogHook{})
	log.Info("odek-bot: tracing on (OTEL_* variables)")
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.Shutdown(sctx)
		if st := p.Stats(); st.Dropped > 0 || st.Failed > 0 {
			log.WithFields(logrus.Fields{"dropped": st.Dropped, "failed": st.Failed, "exported": st.Exported}).
				Warn("odek-bot: tracing: spans were lost (collector slow or unreachable)")
		}
	}, nil
}
