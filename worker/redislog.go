package worker

import (
	"context"
	"strings"

	"github.com/sirupsen/logrus"
)

// RedisLogger carries go-redis' internal log lines (pool dial failures,
// reconnects) into a logrus logger at warn level, with the logger's fields
// (pass one that has the worker's name), so they are formatted and
// filtered like every other line of the process. Install it with
// redis.SetLogger(worker.RedisLogger{Log: log}).
type RedisLogger struct{ Log logrus.FieldLogger }

// Printf implements go-redis' internal.Logging.
func (l RedisLogger) Printf(_ context.Context, format string, v ...any) {
	if l.Log == nil {
		return
	}
	l.Log.WithField("component", "go-redis").Warnf(strings.TrimPrefix(format, "redis: "), v...)
}
