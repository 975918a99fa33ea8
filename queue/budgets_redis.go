package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/redis/go-redis/v9"
)

// Budget keys under the queue's prefix (one hash tag, so every script runs
// on Redis Cluster):
//
//	budget:use:<account>:d<YYYY-MM-DD>  hash tok prm cch usd(µ$) jobs, TTL 70 days
//	budget:use:<account>:m<YYYY-MM>     the same per month, TTL 400 days
//	budget:held:<account>               hash reservation id → "tok usd(µ$) lease-end-ms"
//	budget:rec:<id>                     hash accounts tok usd exp [settled], TTL lease + 8 days
//	budget:accounts                     zset account → last activity (ms)
//	budget:policy                       the operator's caps (JSON)
func (r *Redis) budgetKey(parts ...string) string { return r.p + "budget:" + strings.Join(parts, ":") }

func (r *Redis) accountKeys(account string, now time.Time) []string {
	return []string{r.budgetKey("use", account, "d"+Day(now)), r.budgetKey("use", account, "m"+Month(now)), r.budgetKey("held", account)}
}

// reserveScript is decide in Lua, plus the bookkeeping: it sums each
// account's live reservations (dropping ended ones), compares spend and
// holds with the caps, and on a grant records the reservation under every
// account and in its record.
//
// KEYS: rec, accounts, then per account: day use, month use, held.
// ARGV: id, now ms, lease end ms, max tok, max usd µ$, record ttl ms, n,
// then per account: name, day tok, month tok, day usd µ$, month usd µ$.
var reserveScript = &luascript.Script{Src: `
local rec = KEYS[1]
local now = tonumber(ARGV[2])
if redis.call('EXISTS', rec) == 1 then
  local v = redis.call('HMGET', rec, 'tok', 'usd', 'exp', 'settled')
  if v[4] then return {'settled'} end
  if tonumber(v[3]) > now then return {'ok', tonumber(v[1]), tonumber(v[2])} end
end
local n = tonumber(ARGV[7])
local minl = {-1, -1}
local at = {{0, 0}, {0, 0}}
local used, held, caps = {}, {}, {}
for i = 1, n do
  local b = 3 + (i - 1) * 3
  local hk = KEYS[b + 2]
  local ht, hu = 0, 0
  local h = redis.call('HGETALL', hk)
  for j = 1, #h, 2 do
    local t, u, e = string.match(h[j + 1], '^(%d+) (%d+) (%d+)$')
    if t == nil or tonumber(e) <= now then
      redis.call('HDEL', hk, h[j])
    else
      ht = ht + tonumber(t)
      hu = hu + tonumber(u)
    end
  end
  local d = redis.call('HMGET', KEYS[b], 'tok', 'usd')
  local m = redis.call('HMGET', KEYS[b + 1], 'tok', 'usd')
  used[i] = {tonumber(d[1] or 0), tonumber(m[1] or 0), tonumber(d[2] or 0), tonumber(m[2] or 0)}
  held[i] = {ht, ht, hu, hu}
  local a = 8 + (i - 1) * 5
  caps[i] = {tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])}
  for k = 1, 4 do
    if caps[i][k] > 0 then
      if used[i][k] >= caps[i][k] then
        return {'spent', i, k, used[i][k], caps[i][k]}
      end
      local left = caps[i][k] - used[i][k] - held[i][k]
      local side = 1
      if k > 2 then side = 2 end
      if minl[side] < 0 or left < minl[side] then
        minl[side] = left
        at[side] = {i, k}
      end
    end
  end
end
for side = 1, 2 do
  if minl[side] >= 0 and minl[side] <= 0 then
    local i, k = at[side][1], at[side][2]
    return {'held', i, k, used[i][k] + held[i][k], caps[i][k]}
  end
end
local function bound(left, mx)
  if left < 0 then return mx end
  if mx > 0 and mx < left then return mx end
  return left
end
local tok = bound(minl[1], tonumber(ARGV[4]))
local usd = bound(minl[2], tonumber(ARGV[5]))
local exp = tonumber(ARGV[3])
local names = {}
for i = 1, n do
  local name = ARGV[8 + (i - 1) * 5]
  names[i] = name
  local hk = KEYS[3 + (i - 1) * 3 + 2]
  redis.call('HSET', hk, ARGV[1], string.format('%d %d %d', tok, usd, exp))
  local ttl = redis.call('PTTL', hk)
  if ttl < exp - now then redis.call('PEXPIRE', hk, exp - now + 1000) end
  redis.call('ZADD', KEYS[2], now, name)
end
redis.call('DEL', rec)
redis.call('HSET', rec, 'accounts', table.concat(names, ' '), 'tok', tok, 'usd', usd, 'exp', exp)
redis.call('PEXPIRE', rec, tonumber(ARGV[6]))
return {'ok', tok, usd}
`}

// settleScript counts a spend once and releases the reservation.
//
// KEYS: rec, accounts, then per account: day use, month use, held.
// ARGV: id, now ms, record ttl ms, tok, prm, cch, usd µ$, jobs, day ttl
// ms, month ttl ms, n, names…
var settleScript = &luascript.Script{Src: `
local rec = KEYS[1]
if redis.call('HGET', rec, 'settled') then return 0 end
local n = tonumber(ARGV[11])
local f = {'tok', 'prm', 'cch', 'usd', 'jobs'}
for i = 1, n do
  local b = 3 + (i - 1) * 3
  for p = 0, 1 do
    local k = KEYS[b + p]
    for j = 1, 5 do
      local v = tonumber(ARGV[3 + j])
      if v ~= 0 then redis.call('HINCRBY', k, f[j], v) end
    end
    redis.call('PEXPIRE', k, tonumber(ARGV[9 + p]))
  end
  redis.call('HDEL', KEYS[b + 2], ARGV[1])
  redis.call('ZADD', KEYS[2], tonumber(ARGV[2]), ARGV[11 + i])
end
local names = {}
for i = 1, n do names[i] = ARGV[11 + i] end
redis.call('DEL', rec)
redis.call('HSET', rec, 'accounts', table.concat(names, ' '), 'settled', '1')
redis.call('PEXPIRE', rec, tonumber(ARGV[3]))
return 1
`}

// releaseScript drops an unsettled reservation.
//
// KEYS: rec, then each account's held hash. ARGV: id.
var releaseScript = &luascript.Script{Src: `
if redis.call('HGET', KEYS[1], 'settled') then return 0 end
for i = 2, #KEYS do redis.call('HDEL', KEYS[i], ARGV[1]) end
redis.call('DEL', KEYS[1])
return 1
`}

// ReserveBudget implements Budgets: one script, one round trip.
func (r *Redis) ReserveBudget(ctx context.Context, res Reservation) (Grant, error) {
	if err := res.validate(); err != nil {
		return Grant{}, err
	}
	keys, args := r.reserveCall(res)
	out, err := reserveScript.Run(ctx, r.c, keys, args...).Slice()
	return reserveOutcome(res, out, err)
}

// ReserveBudgetAll implements BudgetBatch: one pipeline of reserve
// scripts, one round trip for all (each script is atomic on its own).
func (r *Redis) ReserveBudgetAll(ctx context.Context, rs []Reservation) ([]Grant, []error) {
	gs, errs := make([]Grant, len(rs)), make([]error, len(rs))
	if len(rs) == 0 {
		return gs, errs
	}
	pipe := r.c.Pipeline()
	cmds := make([]*redis.Cmd, len(rs))
	for i, res := range rs {
		if errs[i] = res.validate(); errs[i] != nil {
			continue
		}
		keys, args := r.reserveCall(res)
		cmds[i] = reserveScript.EvalSha(ctx, pipe, keys, args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		out, err := cmd.Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			keys, args := r.reserveCall(rs[i]) // not loaded yet: Run loads it
			out, err = reserveScript.Run(ctx, r.c, keys, args...).Slice()
		}
		gs[i], errs[i] = reserveOutcome(rs[i], out, err)
	}
	return gs, errs
}

func (r *Redis) reserveCall(res Reservation) ([]string, []any) {
	now := res.Now.UnixMilli()
	keys := []string{r.budgetKey("rec", res.ID), r.budgetKey("accounts")}
	args := []any{res.ID, now, res.Now.Add(res.Lease).UnixMilli(), res.MaxTokens, microUSD(res.MaxUSD), (res.Lease + recordKeep).Milliseconds(), len(res.Accounts)}
	for _, a := range res.Accounts {
		keys = append(keys, r.accountKeys(a.Account, res.Now)...)
		v := a.Caps.vector()
		args = append(args, a.Account, v[0], v[1], v[2], v[3])
	}
	return keys, args
}

func reserveOutcome(res Reservation, out []any, err error) (Grant, error) {
	if err != nil {
		return Grant{}, fmt.Errorf("queue: reserve budget %s: %w", res.ID, err)
	}
	if len(out) == 0 {
		return Grant{}, fmt.Errorf("queue: reserve budget %s: empty script answer", res.ID)
	}
	switch verdict, _ := out[0].(string); verdict {
	case "settled":
		return Grant{}, fmt.Errorf("%w: %s", ErrBudgetSettled, res.ID)
	case "ok":
		tok, usd := toInt(out[1]), toInt(out[2])
		return Grant{Verdict: GrantOK, Tokens: tok, USD: fromMicro(usd)}, nil
	case "spent", "held":
		i, k := int(toInt(out[1]))-1, int(toInt(out[2]))-1
		if i < 0 || i >= len(res.Accounts) || k < 0 || k > 3 {
			return Grant{}, fmt.Errorf("queue: reserve budget %s: bad script answer %v", res.ID, out)
		}
		return refusal(GrantVerdict(verdict), res, i, k, toInt(out[3]), toInt(out[4])), nil
	}
	return Grant{}, fmt.Errorf("queue: reserve budget %s: bad script answer %v", res.ID, out)
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// recordAccounts reads the accounts of reservation id ("" hash: none).
func (r *Redis) recordAccounts(ctx context.Context, id string) ([]string, error) {
	s, err := r.c.HGet(ctx, r.budgetKey("rec", id), "accounts").Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(s), nil
}

// SettleBudget implements Budgets: the record's accounts (one read),
// then one script. The script counts only if the id was not settled
// meanwhile, so a settle racing another counts once.
func (r *Redis) SettleBudget(ctx context.Context, id string, accounts []string, s Spend, now time.Time) (bool, error) {
	if !validID(id) {
		return false, fmt.Errorf("%w: id %q", ErrBudgetInvalid, clip(id, 40))
	}
	if err := s.validate(); err != nil {
		return false, err
	}
	rec, err := r.recordAccounts(ctx, id)
	if err != nil {
		return false, fmt.Errorf("queue: settle budget %s: %w", id, err)
	}
	if len(rec) > 0 {
		accounts = rec
	}
	if err := validateAccounts(accounts); err != nil {
		return false, err
	}
	keys := []string{r.budgetKey("rec", id), r.budgetKey("accounts")}
	args := []any{id, now.UnixMilli(), recordKeep.Milliseconds(), s.Tokens, s.Prompt, s.Cached, microUSD(s.USD), s.Jobs, dayKeep.Milliseconds(), monthKeep.Milliseconds(), len(accounts)}
	for _, a := range accounts {
		keys = append(keys, r.accountKeys(a, now)...)
		args = append(args, a)
	}
	n, err := settleScript.Run(ctx, r.c, keys, args...).Int()
	if err != nil {
		return false, fmt.Errorf("queue: settle budget %s: %w", id, err)
	}
	return n == 1, nil
}

// ReleaseBudget implements Budgets.
func (r *Redis) ReleaseBudget(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("%w: id %q", ErrBudgetInvalid, clip(id, 40))
	}
	accounts, err := r.recordAccounts(ctx, id)
	if err != nil || len(accounts) == 0 {
		return err
	}
	keys := []string{r.budgetKey("rec", id)}
	for _, a := range accounts {
		keys = append(keys, r.budgetKey("held", a))
	}
	if err := releaseScript.Run(ctx, r.c, keys, id).Err(); err != nil {
		return fmt.Errorf("queue: release budget %s: %w", id, err)
	}
	return nil
}

// BudgetUsage implements Budgets: one pipelined round trip.
func (r *Redis) BudgetUsage(ctx context.Context, account string, now time.Time) (AccountUsage, error) {
	if !validAccount(account) {
		return AccountUsage{}, fmt.Errorf("%w: account %q", ErrBudgetInvalid, clip(account, 70))
	}
	periods := historyPeriods(now)
	pipe := r.c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(periods))
	for i, p := range periods {
		cmds[i] = pipe.HGetAll(ctx, r.budgetKey("use", account, p))
	}
	held := pipe.HGetAll(ctx, r.budgetKey("held", account))
	if _, err := pipe.Exec(ctx); err != nil {
		return AccountUsage{}, fmt.Errorf("queue: budget usage of %s: %w", account, err)
	}
	u := AccountUsage{Account: account}
	for i, p := range periods {
		m := cmds[i].Val()
		if len(m) == 0 {
			continue
		}
		get := func(f string) int64 { n, _ := strconv.ParseInt(m[f], 10, 64); return n }
		ps := PeriodSpend{Period: p[1:], Spend: Spend{Tokens: get("tok"), Prompt: get("prm"), Cached: get("cch"), USD: fromMicro(get("usd")), Jobs: get("jobs")}}
		if p[0] == 'd' {
			u.Days = append(u.Days, ps)
		} else {
			u.Months = append(u.Months, ps)
		}
	}
	nowMS := now.UnixMilli()
	for _, v := range held.Val() {
		var t, us, e int64
		if _, err := fmt.Sscanf(v, "%d %d %d", &t, &us, &e); err == nil && e > nowMS {
			u.ReservedTokens += t
			u.ReservedUSD += fromMicro(us)
		}
	}
	return u, nil
}

// BudgetAccounts implements Budgets.
func (r *Redis) BudgetAccounts(ctx context.Context, max int) ([]string, error) {
	stop := int64(-1)
	if max > 0 {
		stop = int64(max) - 1
	}
	out, err := r.c.ZRevRange(ctx, r.budgetKey("accounts"), 0, stop).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: budget accounts: %w", err)
	}
	return out, nil
}

// PutBudgetPolicy implements Budgets.
func (r *Redis) PutBudgetPolicy(ctx context.Context, p BudgetPolicy) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return r.c.Set(ctx, r.budgetKey("policy"), b, 0).Err()
}

// BudgetPolicy implements Budgets.
func (r *Redis) BudgetPolicy(ctx context.Context) (BudgetPolicy, bool, error) {
	b, err := r.c.Get(ctx, r.budgetKey("policy")).Bytes()
	if errors.Is(err, redis.Nil) {
		return BudgetPolicy{}, false, nil
	}
	if err != nil {
		return BudgetPolicy{}, false, fmt.Errorf("queue: budget policy: %w", err)
	}
	var p BudgetPolicy
	if err := json.Unmarshal(b, &p); err != nil {
		return BudgetPolicy{}, false, fmt.Errorf("queue: budget policy does not decode: %w", err)
	}
	return p, true, nil
}

var (
	_ BudgetBatch = (*Redis)(nil)
	_ Budgets     = (*Redis)(nil)
	_ Budgets     = (*Memory)(nil)
	_ Budgets     = (*BudgetBook)(nil)
)
