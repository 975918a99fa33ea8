package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/odekrun/odek/internal/backoff"
	"github.com/odekrun/odek/internal/luascript"
	"github.com/redis/go-redis/v9"
)

// Unreachable reports whether err says Redis could not be reached or
// cannot serve writes for a moment (refused or reset connection, DNS
// failure, timeout, closed connection; a server still LOADING its data; a
// failover under way: READONLY from a demoted master, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN, UNBLOCKED for a blocking read cut off by a role
// change, MOVED/ASK left over after the client's redirects) as opposed to
// an answer Redis gave (wrong password, a script error). Callers retry the
// first kind and report the second; none of them is a job's failure.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.As(err, &oe), errors.As(err, &de), errors.As(err, &ne):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return true
	}
	s := err.Error()
	for _, p := range transientReplies {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// transientReplies are the error replies of a Redis deployment in the
// middle of a restart or failover.
var transientReplies = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "UNBLOCKED", "MOVED", "ASK ", "NOREPLICAS"}

// AuthError reports whether Redis refused the credentials.
func AuthError(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.HasPrefix(s, "NOAUTH") || strings.HasPrefix(s, "WRONGPASS") || strings.Contains(s, "invalid password") || strings.Contains(s, "invalid username-password")
}

// WaitRedis pings c until Redis answers, ctx ends, or Redis gives an answer
// that retrying cannot change (AuthError). Between tries it waits with
// exponential backoff and jitter from 250 ms up to 15 s, and calls onRetry
// (when non-nil) before each wait, so a process can log every retry.
func WaitRedis(ctx context.Context, c redis.UniversalClient, onRetry func(attempt int, delay time.Duration, err error)) error {
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("queue: gave up waiting for Redis at %s: %w (last error: %v)", ClientAddr(c), ctx.Err(), err)
		}
		if !Unreachable(err) {
			return err
		}
		d := retryDelay(attempt, 250*time.Millisecond, 15*time.Second, rand.Float64())
		if onRetry != nil {
			onRetry(attempt, d, err)
		}
		if backoff.Sleep(ctx, d) != nil {
			return fmt.Errorf("queue: gave up waiting for Redis at %s: %w (last error: %v)", ClientAddr(c), ctx.Err(), err)
		}
	}
}

// retryDelay is base·2^(attempt-1) capped at max, scaled by 0.5..1 with
// jitter in [0, 1). Pure.
func retryDelay(attempt int, base, max time.Duration, jitter float64) time.Duration {
	return backoff.Delay(attempt, base, max, 0.5, jitter)
}

// SharedConfig holds the settings every worker on one queue must agree on.
// It is stored in the <prefix>config hash by the first worker; later ones
// read it (ReadSharedConfig) instead of trusting their own flags.
type SharedConfig struct {
	LeaseTTL    time.Duration `json:"lease_ns"`
	MaxAttempts int           `json:"max_attempts"`
}

// ReadSharedConfig returns the stored shared settings; ok is false when none
// are stored yet. c and prefix as for NewRedis (prefix "" means "odek:").
func ReadSharedConfig(ctx context.Context, c redis.UniversalClient, prefix string) (SharedConfig, bool, error) {
	prefix = KeyPrefix(prefix)
	h, err := c.HGetAll(ctx, prefix+"config").Result()
	if err != nil {
		return SharedConfig{}, false, fmt.Errorf("queue: read %sconfig: %w", prefix, err)
	}
	if len(h) == 0 {
		return SharedConfig{}, false, nil
	}
	ms, err1 := strconv.ParseInt(h["lease_ms"], 10, 64)
	n, err2 := strconv.Atoi(h["max_attempts"])
	if err1 != nil || err2 != nil || ms <= 0 || n <= 0 {
		return SharedConfig{}, false, fmt.Errorf("queue: %sconfig holds lease_ms %q and max_attempts %q; want positive integers", prefix, h["lease_ms"], h["max_attempts"])
	}
	return SharedConfig{LeaseTTL: time.Duration(ms) * time.Millisecond, MaxAttempts: n}, true, nil
}

// WriteSharedConfig stores sc. With onlyIfMissing it stores nothing when a
// config exists, and returns the one stored (first writer wins).
func WriteSharedConfig(ctx context.Context, c redis.UniversalClient, prefix string, sc SharedConfig, onlyIfMissing bool) (SharedConfig, error) {
	prefix = KeyPrefix(prefix)
	if sc.LeaseTTL < time.Millisecond || sc.MaxAttempts <= 0 {
		return sc, fmt.Errorf("queue: shared config needs a lease of at least 1ms and max_attempts ≥ 1, got %v and %d", sc.LeaseTTL, sc.MaxAttempts)
	}
	key := prefix + "config"
	if onlyIfMissing {
		if err := writeConfigNX.Run(ctx, c, []string{key}, sc.LeaseTTL.Milliseconds(), sc.MaxAttempts).Err(); err != nil {
			return sc, fmt.Errorf("queue: write %s: %w", key, err)
		}
		got, _, err := ReadSharedConfig(ctx, c, prefix)
		return got, err
	}
	if err := c.HSet(ctx, key, "lease_ms", sc.LeaseTTL.Milliseconds(), "max_attempts", sc.MaxAttempts).Err(); err != nil {
		return sc, fmt.Errorf("queue: write %s: %w", key, err)
	}
	return sc, nil
}

var writeConfigNX = &luascript.Script{Src: `
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'lease_ms', ARGV[1], 'max_attempts', ARGV[2])
end
return 1
`}
