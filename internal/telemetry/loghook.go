package telemetry

import (
	"context"

	"github.com/sirupsen/logrus"
)

// Log field names of the trace ids on logrus lines.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
)

// LogHook adds trace_id and span_id to every logrus line whose entry
// carries a context with a span (logger.WithContext(ctx)). Install it
// once: logger.AddHook(telemetry.LogHook{}). Lines without a context, or
// with one that carries no trace, are left as they are.
type LogHook struct{}

// Levels is every level.
func (LogHook) Levels() []logrus.Level { return logrus.AllLevels }

// Fire adds the ids; it never fails. logrus hands hooks the entry's own
// copy of its fields, so adding to them is safe.
func (LogHook) Fire(e *logrus.Entry) error {
	if e.Context == nil {
		return nil
	}
	tid, sid := IDs(e.Context)
	if tid == "" {
		return nil
	}
	if _, ok := e.Data[LogTraceID]; !ok {
		e.Data[LogTraceID] = tid
	}
	if _, ok := e.Data[LogSpanID]; !ok {
		e.Data[LogSpanID] = sid
	}
	return nil
}

// LogFields returns ctx's trace_id and span_id as logrus fields, or nil:
// for a logger built once per job (log.WithFields(telemetry.LogFields(ctx))).
func LogFields(ctx context.Context) logrus.Fields {
	tid, sid := IDs(ctx)
	if tid == "" {
		return nil
	}
	return logrus.Fields{LogTraceID: tid, LogSpanID: sid}
}
