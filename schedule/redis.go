package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/odekrun/odek/queue"
	"github.com/redis/go-redis/v9"
)

// Redis is the distributed Store. Its keys share the queue's hash tag
// (queue.KeyPrefix), so they live in the queue's cluster slot, and every
// state change is one Lua script given every key it touches:
//
//	<P>sched:<id>            hash: def (definition JSON), chat, enabled, next, last (unix ms),
//	                         last_status, last_job, last_error, fires, misses
//	<P>sched:due             sorted set: enabled schedule ids by next fire (unix ms)
//	<P>sched:all             set: every schedule id
//	<P>sched:chat:<chat>     set: the chat's schedule ids
//	<P>sched:fire:<id>@<ms>  hash: a pending fire: job (JSON), sid, at, owner, token, deadline, reclaimed
//	<P>sched:firing          sorted set: pending fires (<id>@<ms>) by lease deadline (unix ms)
//	<P>sched:zones           hash: chat id → the chat's time zone (/tz)
//
// A schedule's hash also holds retries (a one-shot's fires again after a
// failed job, Store.Retry).
type Redis struct {
	c redis.UniversalClient
	p string
}

// NewRedis returns the Redis store for the queue prefix prefix ("" =
// "odek:"; keys go under queue.KeyPrefix(prefix)). The caller owns c.
func NewRedis(c redis.UniversalClient, prefix string) *Redis {
	return &Redis{c: c, p: queue.KeyPrefix(prefix)}
}

func (r *Redis) kSched(id string) string   { return r.p + "sched:" + id }
func (r *Redis) kDue() string              { return r.p + "sched:due" }
func (r *Redis) kAll() string              { return r.p + "sched:all" }
func (r *Redis) kChat(chat int64) string   { return r.p + "sched:chat:" + strconv.FormatInt(chat, 10) }
func (r *Redis) kFire(field string) string { return r.p + "sched:fire:" + field }
func (r *Redis) kFiring() string           { return r.p + "sched:firing" }
func msOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// KEYS: sched, due, all, chat. ARGV: def, chat, next ms, id, enabled,
// max per chat (0: none). Returns 1 created, 0 id taken, -n chat full.
var createScript = &luascript.Script{Src: `
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'def') == ARGV[1] then return 1 end
  return 0
end
local max = tonumber(ARGV[6])
if max > 0 then
  local n = redis.call('SCARD', KEYS[4])
  if n >= max then return -n end
end
redis.call('HSET', KEYS[1], 'def', ARGV[1], 'chat', ARGV[2], 'enabled', ARGV[5], 'next', ARGV[3], 'fires', 0, 'misses', 0)
if ARGV[5] == '1' then redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4]) end
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[4])
return 1
`}

// KEYS: sched, due. ARGV: enabled, next ms or ”, id.
var enableScript = &luascript.Script{Src: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '1' and ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'enabled', '1', 'next', ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
else
  redis.call('HSET', KEYS[1], 'enabled', '0', 'next', '')
  redis.call('ZREM', KEYS[2], ARGV[3])
end
return 1
`}

// KEYS: sched, due, all, chat. ARGV: id, chat.
var deleteScript = &luascript.Script{Src: `
if redis.call('HGET', KEYS[1], 'chat') ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
return 1
`}

// KEYS: sched, due, fire, firing. ARGV: 1 manual, 2 expected ms, 3 next
// ms or ”, 4 fire (0/1), 5 at ms, 6 status, 7 missed, 8 job, 9 owner,
// 10 token, 11 deadline ms, 12 id, 13 fire field, 14 error (a skip's
// reason).
// Returns 1 done, 0 not found, -1 next moved, -2 fire already pending.
var claimScript = &luascript.Script{Src: `
if ARGV[4] == '1' then
  local tok = redis.call('HGET', KEYS[3], 'token')
  if tok == ARGV[10] then return 1 end
  if tok then return -2 end
end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '0' then
  if redis.call('HGET', KEYS[1], 'enabled') ~= '1' or redis.call('HGET', KEYS[1], 'next') ~= ARGV[2] then return -1 end
  if ARGV[3] == '' then
    redis.call('HSET', KEYS[1], 'enabled', '0', 'next', '')
    redis.call('ZREM', KEYS[2], ARGV[12])
  else
    redis.call('HSET', KEYS[1], 'next', ARGV[3])
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[12])
  end
end
if ARGV[7] ~= '0' then redis.call('HINCRBY', KEYS[1], 'misses', ARGV[7]) end
if ARGV[4] == '0' then
  redis.call('HSET', KEYS[1], 'last', ARGV[5], 'last_status', ARGV[6], 'last_error', ARGV[14] or '')
  return 1
end
redis.call('HSET', KEYS[3], 'job', ARGV[8], 'sid', ARGV[12], 'at', ARGV[5], 'owner', ARGV[9], 'token', ARGV[10], 'deadline', ARGV[11], 'reclaimed', 0)
redis.call('ZADD', KEYS[4], ARGV[11], ARGV[13])
return 1
`}

// KEYS: fire, firing, sched. ARGV: token, field, at ms, job id, error, status.
var completeScript = &luascript.Script{Src: `
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HSET', KEYS[3], 'last', ARGV[3], 'last_job', ARGV[4], 'last_error', ARGV[5], 'last_status', ARGV[6])
  redis.call('HINCRBY', KEYS[3], 'fires', 1)
end
return 1
`}

// KEYS: fire, firing. ARGV: field, now ms, owner, token, deadline ms.
var reclaimScript = &luascript.Script{Src: `
local d = redis.call('HGET', KEYS[1], 'deadline')
if not d then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
if tonumber(d) > tonumber(ARGV[2]) then return false end
redis.call('HSET', KEYS[1], 'owner', ARGV[3], 'token', ARGV[4], 'deadline', ARGV[5])
local n = redis.call('HINCRBY', KEYS[1], 'reclaimed', 1)
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
return {redis.call('HGET', KEYS[1], 'job'), redis.call('HGET', KEYS[1], 'sid'), redis.call('HGET', KEYS[1], 'at'), n}
`}

func redisErr(op string, err error) error {
	return fmt.Errorf("schedule: redis %s: %w", op, err)
}

// Create implements Store.
func (r *Redis) Create(ctx context.Context, s Schedule, maxPerChat int) error {
	if !validID(s.ID) {
		return invalid("id", "%q", clip(s.ID, 40))
	}
	def, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("schedule: encode: %w", err)
	}
	en := "0"
	if s.Enabled && !s.Next.IsZero() {
		en = "1"
	}
	n, err := createScript.Run(ctx, r.c, []string{r.kSched(s.ID), r.kDue(), r.kAll(), r.kChat(s.ChatID)},
		def, s.ChatID, msOrEmpty(s.Next), s.ID, en, maxPerChat).Int()
	if err != nil {
		return redisErr("create", err)
	}
	if n < 0 {
		return limitErr(-n)
	}
	if n == 0 {
		return fmt.Errorf("%w: id %s exists", ErrConflict, s.ID)
	}
	return nil
}

func parseMS(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

func decodeSchedule(h map[string]string) (Schedule, error) {
	var s Schedule
	if err := json.Unmarshal([]byte(h["def"]), &s); err != nil {
		return s, fmt.Errorf("schedule: stored schedule does not decode: %w", err)
	}
	s.Enabled = h["enabled"] == "1"
	s.Next, s.Last = parseMS(h["next"]), parseMS(h["last"])
	s.LastStatus, s.LastJobID, s.LastError = FireStatus(h["last_status"]), h["last_job"], h["last_error"]
	s.Fires, _ = strconv.ParseInt(h["fires"], 10, 64)
	s.Misses, _ = strconv.ParseInt(h["misses"], 10, 64)
	s.Retries, _ = strconv.Atoi(h["retries"])
	return s, nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, id string) (Schedule, error) {
	if !validID(id) {
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, clip(id, 40))
	}
	h, err := r.c.HGetAll(ctx, r.kSched(id)).Result()
	if err != nil {
		return Schedule{}, redisErr("get", err)
	}
	if len(h) == 0 {
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return decodeSchedule(h)
}

func (r *Redis) getMany(ctx context.Context, ids []string) ([]Schedule, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := r.c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, r.kSched(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, redisErr("read schedules", err)
	}
	out := make([]Schedule, 0, len(ids))
	for _, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue // deleted meanwhile
		}
		s, err := decodeSchedule(h)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// List implements Store.
func (r *Redis) List(ctx context.Context, chatID int64) ([]Schedule, error) {
	key := r.kAll()
	if chatID != 0 {
		key = r.kChat(chatID)
	}
	ids, err := r.c.SMembers(ctx, key).Result()
	if err != nil {
		return nil, redisErr("list", err)
	}
	sort.Strings(ids)
	return r.getMany(ctx, ids)
}

// SetEnabled implements Store.
func (r *Redis) SetEnabled(ctx context.Context, id string, enabled bool, next time.Time) (Schedule, error) {
	if !validID(id) {
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, clip(id, 40))
	}
	en := "0"
	if enabled {
		en = "1"
	}
	n, err := enableScript.Run(ctx, r.c, []string{r.kSched(id), r.kDue()}, en, msOrEmpty(next), id).Int()
	if err != nil {
		return Schedule{}, redisErr("enable", err)
	}
	if n == 0 {
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return r.Get(ctx, id)
}

// Delete implements Store.
func (r *Redis) Delete(ctx context.Context, id string) error {
	s, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	n, err := deleteScript.Run(ctx, r.c, []string{r.kSched(id), r.kDue(), r.kAll(), r.kChat(s.ChatID)}, id, s.ChatID).Int()
	if err != nil {
		return redisErr("delete", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return nil
}

// Due implements Store.
func (r *Redis) Due(ctx context.Context, now time.Time, max int) ([]Schedule, error) {
	if max <= 0 {
		max = 1000
	}
	ids, err := r.c.ZRangeByScore(ctx, r.kDue(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(max)}).Result()
	if err != nil {
		return nil, redisErr("due", err)
	}
	all, err := r.getMany(ctx, ids)
	// A schedule claimed between the range and the read has moved on.
	due := all[:0]
	for _, s := range all {
		if s.Enabled && !s.Next.IsZero() && !s.Next.After(now) {
			due = append(due, s)
		}
	}
	return due, err
}

// claimCall is one Claim's script keys and arguments, and the fire it
// records if it wins.
func (r *Redis) claimCall(c Claim) (keys []string, args []any, f Fire, err error) {
	if err := validateClaim(c); err != nil {
		return nil, nil, Fire{}, err
	}
	field := fireField(c.ID, c.At)
	var job []byte
	fireArg := "0"
	if c.Job.IdempotencyKey != "" {
		if job, err = json.Marshal(c.Job); err != nil {
			return nil, nil, Fire{}, fmt.Errorf("schedule: encode job: %w", err)
		}
		f = Fire{ScheduleID: c.ID, At: c.At.UTC().Truncate(time.Millisecond), Job: c.Job, Owner: c.Owner, Token: newToken(),
			Deadline: c.Now.Add(c.Lease).UTC().Truncate(time.Millisecond)}
		fireArg = "1"
	}
	manual := "0"
	if c.Manual {
		manual = "1"
	}
	return []string{r.kSched(c.ID), r.kDue(), r.kFire(field), r.kFiring()},
		[]any{manual, msOrEmpty(c.Expected), msOrEmpty(c.Next), fireArg, c.At.UnixMilli(), string(c.Status), c.Missed,
			job, c.Owner, f.Token, msOrEmpty(f.Deadline), c.ID, field, c.Error}, f, nil
}

func claimOutcome(c Claim, n int64) error {
	switch n {
	case 0:
		return fmt.Errorf("%w: %q", ErrNotFound, c.ID)
	case -1:
		return ErrConflict
	case -2:
		return fmt.Errorf("%w: fire %s is pending", ErrConflict, fireField(c.ID, c.At))
	}
	return nil
}

// Claim implements Store.
func (r *Redis) Claim(ctx context.Context, c Claim) (Fire, error) {
	keys, args, f, err := r.claimCall(c)
	if err != nil {
		return Fire{}, err
	}
	n, err := claimScript.Run(ctx, r.c, keys, args...).Int64()
	if err != nil {
		return Fire{}, redisErr("claim", err)
	}
	if err := claimOutcome(c, n); err != nil {
		return Fire{}, err
	}
	return f, nil
}

// ClaimAll implements BatchStore: one pipeline of claim scripts.
func (r *Redis) ClaimAll(ctx context.Context, cs []Claim) ([]Fire, []error) {
	fires, errs := make([]Fire, len(cs)), make([]error, len(cs))
	pipe := r.c.Pipeline()
	cmds := make([]*redis.Cmd, len(cs))
	type call struct {
		keys []string
		args []any
	}
	calls := make([]call, len(cs))
	for i, c := range cs {
		keys, args, f, err := r.claimCall(c)
		if err != nil {
			errs[i] = err
			continue
		}
		fires[i], calls[i] = f, call{keys, args}
		cmds[i] = claimScript.EvalSha(ctx, pipe, keys, args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		n, err := cmd.Int64()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// Not run: load the script (Run does) and send this one again.
			n, err = claimScript.Run(ctx, r.c, calls[i].keys, calls[i].args...).Int64()
		}
		if err != nil {
			errs[i] = redisErr("claim", err)
			continue
		}
		errs[i] = claimOutcome(cs[i], n)
	}
	for i := range fires {
		if errs[i] != nil {
			fires[i] = Fire{}
		}
	}
	return fires, errs
}

func (r *Redis) completeCall(f Fire, res FireResult) ([]string, []any) {
	field := fireField(f.ScheduleID, f.At)
	st := StatusEnqueued
	if res.Err != "" {
		st = StatusFailed
	}
	return []string{r.kFire(field), r.kFiring(), r.kSched(f.ScheduleID)},
		[]any{f.Token, field, f.At.UnixMilli(), res.JobID, res.Err, string(st)}
}

func completeOutcome(f Fire, n int64) error {
	if n == 0 {
		return fmt.Errorf("%w: fire %s is no longer held by this token", ErrConflict, fireField(f.ScheduleID, f.At))
	}
	return nil
}

// Complete implements Store.
func (r *Redis) Complete(ctx context.Context, f Fire, res FireResult) error {
	keys, args := r.completeCall(f, res)
	n, err := completeScript.Run(ctx, r.c, keys, args...).Int64()
	if err != nil {
		return redisErr("complete", err)
	}
	return completeOutcome(f, n)
}

// CompleteAll implements BatchStore: one pipeline of complete scripts.
func (r *Redis) CompleteAll(ctx context.Context, fs []Fire, rs []FireResult) []error {
	errs := make([]error, len(fs))
	if len(fs) == 0 {
		return errs
	}
	pipe := r.c.Pipeline()
	cmds := make([]*redis.Cmd, len(fs))
	for i := range fs {
		keys, args := r.completeCall(fs[i], rs[i])
		cmds[i] = completeScript.EvalSha(ctx, pipe, keys, args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, cmd := range cmds {
		n, err := cmd.Int64()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			keys, args := r.completeCall(fs[i], rs[i])
			n, err = completeScript.Run(ctx, r.c, keys, args...).Int64()
		}
		if err != nil {
			errs[i] = redisErr("complete", err)
			continue
		}
		errs[i] = completeOutcome(fs[i], n)
	}
	return errs
}

// Reclaim implements Store.
func (r *Redis) Reclaim(ctx context.Context, now time.Time, owner string, lease time.Duration, max int) ([]Fire, error) {
	if max <= 0 {
		max = 100
	}
	fields, err := r.c.ZRangeByScore(ctx, r.kFiring(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(max)}).Result()
	if err != nil {
		return nil, redisErr("reclaim", err)
	}
	var out []Fire
	for _, field := range fields {
		tok := newToken()
		dl := now.Add(lease).UTC().Truncate(time.Millisecond)
		v, err := reclaimScript.Run(ctx, r.c, []string{r.kFire(field), r.kFiring()}, field, now.UnixMilli(), owner, tok, dl.UnixMilli()).Slice()
		if errors.Is(err, redis.Nil) {
			continue // taken by another process, or completed
		}
		if err != nil {
			return out, redisErr("reclaim", err)
		}
		if len(v) != 4 {
			continue
		}
		js, _ := v[0].(string)
		sid, _ := v[1].(string)
		at, _ := v[2].(string)
		n, _ := v[3].(int64)
		f := Fire{ScheduleID: sid, At: parseMS(at), Owner: owner, Token: tok, Deadline: dl, Reclaimed: int(n)}
		if err := json.Unmarshal([]byte(js), &f.Job); err != nil {
			return out, fmt.Errorf("schedule: pending fire %s does not decode: %w", field, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Pending implements Store.
func (r *Redis) Pending(ctx context.Context) (int, error) {
	n, err := r.c.ZCard(ctx, r.kFiring()).Result()
	if err != nil {
		return 0, redisErr("pending", err)
	}
	return int(n), nil
}
