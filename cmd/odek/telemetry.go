package main

import (
	"context"
	"os"
	"time"

	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/sirupsen/logrus"
)

// exitWait bounds the export of the last spans when a command ends.
const exitWait = 2 * time.Second

// startTracing sets tracing up for one odek process from the OTEL_*
// variables (docs/OBSERVABILITY.md): off unless a collector is configured.
// It continues a TRACEPARENT the process was given (a CI pipeline, a parent
// run), adds trace ids to log's lines and, when span is not empty, opens
// the process's root span (for `odek run` and `odek subagent`; the worker
// opens one per job). The returned end closes that span and exports what
// is queued, waiting at most exitWait: a collector that accepts and never
// answers delays the exit by that much (one that refuses the connection by
// nothing measurable), and never fails the command.
func startTracing(ctx context.Context, service, span string, log *logrus.Logger) (context.Context, func(), error) {
	cfg, err := telemetry.FromEnv(os.LookupEnv)
	if err != nil {
		return ctx, func() {}, err
	}
	opts := telemetry.Options{Service: service, Version: version}
	if cfg.Enabled { // the redactor serves captured span content only
		red := redact.New()
		red.AddFromEnv(os.Environ())
		opts.Redactor = red
	}
	p, err := telemetry.Setup(ctx, cfg, opts)
	if err != nil {
		return ctx, func() {}, err
	}
	if log != nil {
		log.AddHook(telemetry.LogHook{})
	}
	ctx = telemetry.ContextFromEnv(ctx, os.LookupEnv)
	var root telemetry.Span
	if span != "" {
		ctx, root = telemetry.Start(ctx, span)
	}
	return ctx, func() {
		root.End()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitWait)
		defer cancel()
		_ = p.Shutdown(sctx)
		if st := p.Stats(); log != nil && (st.Dropped > 0 || st.Failed > 0) {
			log.WithFields(logrus.Fields{"dropped": st.Dropped, "failed": st.Failed, "exported": st.Exported}).
				Warn("odek: tracing: spans were lost (collector slow or unreachable)")
		}
	}, nil
}
