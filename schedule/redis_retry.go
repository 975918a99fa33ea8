package schedule

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/redis/go-redis/v9"
)

func (r *Redis) kZones() string { return r.p + "sched:zones" }

// KEYS: sched, due. ARGV: at ms, next ms, max, id. Returns 1 armed, 0 not
// found, -1 not waiting for a retry.
var retryScript = &luascript.Script{Src: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'enabled') == '1' or redis.call('HGET', KEYS[1], 'last') ~= ARGV[1] then return -1 end
local n = tonumber(redis.call('HGET', KEYS[1], 'retries') or '0')
if n >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], 'enabled', '1', 'next', ARGV[2], 'retries', n + 1)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
return 1
`}

// Retry implements Store.
func (r *Redis) Retry(ctx context.Context, id string, at, next time.Time, max int) (Schedule, error) {
	if !validID(id) {
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, clip(id, 40))
	}
	n, err := retryScript.Run(ctx, r.c, []string{r.kSched(id), r.kDue()},
		strconv.FormatInt(at.UnixMilli(), 10), strconv.FormatInt(next.UnixMilli(), 10), max, id).Int()
	switch {
	case err != nil:
		return Schedule{}, redisErr("retry", err)
	case n == 0:
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	case n < 0:
		return Schedule{}, fmt.Errorf("%w: schedule %s is not waiting for a retry of its fire at %s", ErrConflict, id, at.UTC().Format(time.RFC3339))
	}
	return r.Get(ctx, id)
}

// Zone implements Store.
func (r *Redis) Zone(ctx context.Context, chatID int64) (string, error) {
	tz, err := r.c.HGet(ctx, r.kZones(), strconv.FormatInt(chatID, 10)).Result()
	if err == redis.Nil {
		return "", nil
	}
	if err != nil {
		return "", redisErr("zone", err)
	}
	return tz, nil
}

// SetZone implements Store.
func (r *Redis) SetZone(ctx context.Context, chatID int64, tz string) error {
	var err error
	if tz == "" {
		err = r.c.HDel(ctx, r.kZones(), strconv.FormatInt(chatID, 10)).Err()
	} else {
		err = r.c.HSet(ctx, r.kZones(), strconv.FormatInt(chatID, 10), tz).Err()
	}
	if err != nil {
		return redisErr("set zone", err)
	}
	return nil
}
