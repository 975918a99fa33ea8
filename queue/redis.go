package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/redis/go-redis/v9"
)

// Redis is the Queue on Redis Streams, for workers in many processes. Every
// state change of a job is one Lua script, so it is atomic on the server;
// see docs/QUEUE.md for the keys and the command count per job. Every key
// starts with KeyPrefix(Options.Prefix), whose hash tag puts the whole queue
// in one Redis Cluster slot, and every script declares the queue's jobs
// stream as its key, so the queue runs on one node, behind Sentinel, or on
// Redis Cluster alike. Safe for concurrent use.
type Redis struct {
	c  redis.UniversalClient
	o  Options
	p  string     // KeyPrefix(o.Prefix)
	ks []string   // the KEYS of every queue script: {p .. "jobs"}
	co *coalescer // start and Heartbeat scripts share round trips
	// cw carries Enqueue, Ack and Cancel, whose batches end with a WAIT
	// for the replicas when the queue waits (see replicas.go); without a
	// wait it is co. Kept apart so a claim's start and the heartbeats never
	// queue behind a wait (after a failover the new master has no replica
	// yet, and a resent batch waits out its whole timeout).
	cw *coalescer

	// nextReclaim (unix ns) throttles the expired-lease scan to once per
	// reclaimInterval per Redis value; other claims skip straight to new jobs.
	nextReclaim atomic.Int64
	// deadLettered counts jobs this value's claims moved to the dead
	// letters; suspected, jobs they found abandoned and made suspects.
	deadLettered, suspected atomic.Uint64
	// suspectWait (ms) is how long the oldest suspect had waited at the
	// last scan that found the consumer busy; 0 when none waited.
	suspectWait atomic.Int64
}

// SuspectWait implements SuspectWaiter: what the last expired-lease scan of
// this value saw while its consumer was busy.
func (r *Redis) SuspectWait() time.Duration {
	return time.Duration(r.suspectWait.Load()) * time.Millisecond
}

// reclaimScanCount bounds the expired leases one reclaim scan settles per
// stream; the rest wait for the next scan.
const reclaimScanCount = 100

// newToken returns a lease token prefix: the claim time (unix ms, this
// machine's clock) and 16 random hex digits. Inspect reads the claim time
// back from the owner field, so the scripts store no extra field.
func newToken() string {
	return strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + newID()[:16]
}

// tokenTime is the claim time in a lease token; zero if there is none.
func tokenTime(tok string) time.Time {
	ms, _, ok := strings.Cut(tok, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// reclaimInterval is how often Claim scans for expired leases: a quarter of
// the lease, at most a second. Pure, so it has a table test.
func reclaimInterval(lease time.Duration) time.Duration {
	return min(lease/4, time.Second)
}

var _ Queue = (*Redis)(nil)

// NewRedis returns a queue on c and creates the consumer groups if missing.
// c stays owned by the caller. go-redis resends a command whose connection
// broke (MaxRetries), so a script may run twice when Redis restarts after
// running it: enqueue and start recognise their own resent call and answer
// as the first time; a resent reclaim or ack is settled by the next
// reclaim scan.
func NewRedis(ctx context.Context, c redis.UniversalClient, opts Options) (*Redis, error) {
	r := &Redis{c: c, o: opts.withDefaults(), co: &coalescer{c: c}}
	r.p = KeyPrefix(r.o.Prefix)
	r.ks = []string{r.p + "jobs"}
	if err := checkLayout(ctx, c, r.o.Prefix); err != nil {
		return nil, err
	}
	if err := r.ensureGroups(ctx); err != nil {
		return nil, err
	}
	r.cw = r.co
	if w := newReplicaWaiter(ctx, c, r.ks[0], r.o); w != nil {
		r.cw = &coalescer{c: c, w: w}
	}
	return r, nil
}

// WaitsForReplicas is the number of replicas a user-visible write waits
// for (0: none; see Options.MinReplicas).
func (r *Redis) WaitsForReplicas() int {
	if r.cw.w == nil {
		return 0
	}
	return r.cw.w.n
}

// Client returns the Redis client the queue was made with.
func (r *Redis) Client() redis.UniversalClient { return r.c }

// Options returns the queue's options with defaults filled in.
func (r *Redis) Options() Options { return r.o }

func (r *Redis) key(parts ...string) string { return r.p + strings.Join(parts, "") }

func (r *Redis) ensureGroups(ctx context.Context) error {
	for _, g := range [][2]string{{r.key("jobs"), r.o.Group}, {r.key("suspects"), r.o.Group}, {r.key("results"), r.o.ResultsGroup}, {r.key("approvals"), r.o.ResultsGroup}} {
		err := r.c.XGroupCreateMkStream(ctx, g[0], g[1], "0").Err()
		if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			return fmt.Errorf("queue: create consumer group %s on %s: %w", g[1], g[0], err)
		}
	}
	return nil
}

func isNoGroup(err error) bool { return err != nil && strings.Contains(err.Error(), "NOGROUP") }

// Lua prelude shared by the scripts. KEYS[1] the jobs stream (declared so
// a cluster client routes the call to the queue's slot), ARGV[1] the tagged
// prefix, ARGV[2] group, ARGV[3] retain ms. Every other key a script
// touches is the prefix and a name, so it shares KEYS[1]'s hash tag and
// slot; the prelude refuses a call whose KEYS[1] is not that prefix's jobs
// stream. finish publishes a job's one result and starts the chat's next
// job; it is a no-op for a finished job.
const luaPrelude = `
local P, G, RET = ARGV[1], ARGV[2], tonumber(ARGV[3])
local JOBS = P .. 'jobs'
if KEYS[1] ~= JOBS then return redis.error_reply('ERR odek queue script: KEYS[1] must be the prefix jobs stream') end
local SUSP = P .. 'suspects'
local UNFIN = P .. 'unfinished' -- count of unfinished jobs
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A suspect's lease lives in the suspects stream and its entry field is
-- 's' .. stream id (stream ids start with a digit); entryof returns the
-- stream and the id of an entry field.
local function entryof(e)
  if e and string.byte(e, 1) == 115 then return SUSP, string.sub(e, 2) end
  return JOBS, e
end
local function finish(id, res)
  local h = P .. 'job:' .. id
  local st = redis.call('HGET', h, 'state')
  if (not st) or st == 'done' then return 0 end
  local entry = redis.call('HGET', h, 'entry')
  if entry and entry ~= '' then
    local s, eid = entryof(entry)
    redis.call('XACK', s, G, eid)
    redis.call('XDEL', s, eid)
  end
  redis.call('HSET', h, 'state', 'done', 'owner', '', 'entry', '', 'result', res)
  redis.call('DECR', UNFIN)
  redis.call('PEXPIRE', h, RET)
  redis.call('PEXPIRE', P .. 'progress:' .. id, RET)
  redis.call('XADD', P .. 'results', '*', 'job', id, 'r', res)
  local cl = P .. 'chat:' .. (redis.call('HGET', h, 'lane') or redis.call('HGET', h, 'chat'))
  redis.call('LREM', cl, 1, id)
  local head = redis.call('LINDEX', cl, 0)
  if head then
    local hh = P .. 'job:' .. head
    if redis.call('HGET', hh, 'state') == 'queued' then
      local e = redis.call('XADD', JOBS, '*', 'id', head)
      redis.call('HSET', hh, 'state', 'ready', 'entry', e)
    end
  end
  return 1
end
local function sysresult(id, status, attempt, err)
  local h = P .. 'job:' .. id
  return '{"job_id":"' .. id .. '","chat_id":' .. redis.call('HGET', h, 'chat') ..
    ',"status":"' .. status .. '","error":"' .. err .. '","attempt":' .. attempt .. '}'
end
`

// ARGV[4] id, [5] data, [6] chat, [7] idempotency key or "", [8] dedupe
// ms, [9] lane key (LaneKey: the chat id for the main lane).
var enqueueScript = &luascript.Script{Src: luaPrelude + `
local h = P .. 'job:' .. ARGV[4]
-- The same call again (a client resending it after a lost reply) finds
-- its own job, with the same payload: it succeeded.
if redis.call('HGET', h, 'data') == ARGV[5] then return {1} end
if ARGV[7] ~= '' then
  local k = P .. 'idem:' .. ARGV[7]
  if not redis.call('SET', k, ARGV[4], 'NX', 'PX', ARGV[8]) then
    local prev = redis.call('GET', k)
    return {0, prev, redis.call('HGET', P .. 'job:' .. prev, 'data') or ''}
  end
  if redis.call('EXISTS', h) == 1 then redis.call('DEL', k) return {2} end
elseif redis.call('EXISTS', h) == 1 then
  return {2}
end
redis.call('HSET', h, 'data', ARGV[5], 'chat', ARGV[6], 'lane', ARGV[9], 'attempt', 0, 'state', 'queued', 'owner', '', 'entry', '')
redis.call('INCR', UNFIN)
if redis.call('RPUSH', P .. 'chat:' .. ARGV[9], ARGV[4]) == 1 then
  local e = redis.call('XADD', JOBS, '*', 'id', ARGV[4])
  redis.call('HSET', h, 'state', 'ready', 'entry', e)
end
return {1}
`}

// ARGV[4] token, [5] max attempts, [6] consumer, [7] min idle ms, [8] scan
// count, [9] results retain ms, [10] dead retain ms, [11] dead max length. Every expired lease found (up to the scan count per stream) is
// settled here: canceled, dead-lettered after MaxAttempts deaths alone, or
// made a suspect (its entry removed, its id pushed on suspect-queue). Then,
// if the consumer holds no lease at all, one suspect is handed to it alone.
// Returns {dead-lettered, suspected, oldest waiting suspect's wait in ms
// (reported to a busy consumer only), then id, data, attempt, token, entry
// for the lease handed out, if any}.
var reclaimScript = &luascript.Script{Src: luaPrelude + `
local SQ = P .. 'suspect-queue'
local maxatt = tonumber(ARGV[5])
local out = {0, 0, 0}
-- Retention, whether or not a front end reads results: results older
-- than ARGV[9] ms, dead letters older than ARGV[10] ms or past ARGV[11].
local now = nowms()
redis.call('XTRIM', P .. 'results', 'MINID', '~', (now - tonumber(ARGV[9])) .. '-0')
redis.call('XTRIM', P .. 'dead', 'MINID', '~', (now - tonumber(ARGV[10])) .. '-0')
redis.call('XTRIM', P .. 'dead', 'MAXLEN', '~', ARGV[11])
for _, stream in ipairs({JOBS, SUSP}) do
  local pend = redis.call('XPENDING', stream, G, 'IDLE', ARGV[7], '-', '+', ARGV[8])
  for _, p in ipairs(pend) do
    local eid = p[1]
    local e = redis.call('XRANGE', stream, eid, eid)[1]
    local id = e and e[2][2]
    local h = id and (P .. 'job:' .. id)
    local st = h and redis.call('HGET', h, 'state')
    local alone = stream == SUSP
    local want = eid
    if alone then want = 's' .. eid end
    if (not id) or redis.call('HGET', h, 'entry') ~= want or (st ~= 'running' and st ~= 'ready') then
      redis.call('XACK', stream, G, eid)
    elseif redis.call('HGET', h, 'cancel') == '1' then
      finish(id, sysresult(id, 'canceled', redis.call('HGET', h, 'attempt'), 'queue: canceled'))
    elseif st == 'ready' then
      -- Read by a worker that died before it started the job: it never
      -- ran, so it goes back as new.
      redis.call('XACK', stream, G, eid)
      redis.call('XDEL', stream, eid)
      redis.call('HSET', h, 'entry', redis.call('XADD', JOBS, '*', 'id', id))
    else
      local attempt = tonumber(redis.call('HGET', h, 'attempt'))
      local strikes = tonumber(redis.call('HGET', h, 'strikes') or '0')
      local how = 'beside other jobs'
      if alone then
        strikes = redis.call('HINCRBY', h, 'strikes', 1)
        how = 'alone'
      end
      redis.call('HSET', h, 'history', (redis.call('HGET', h, 'history') or '') .. attempt .. '\t' ..
        p[2] .. '\tlease expired: worker died or stalled (' .. how .. ')\n')
      if strikes >= maxatt then
        redis.call('XADD', P .. 'dead', '*', 'id', id, 'data', redis.call('HGET', h, 'data'), 'attempt', attempt, 'strikes', strikes, 'history', redis.call('HGET', h, 'history'))
        out[1] = out[1] + 1
        finish(id, sysresult(id, 'dead_lettered', attempt,
          "queue: job's worker died " .. strikes .. ' times while it ran alone (MaxAttempts ' .. maxatt ..
          ', ' .. attempt .. ' attempts in all); moved to the dead-letter stream'))
      else
        redis.call('XACK', stream, G, eid)
        redis.call('XDEL', stream, eid)
        redis.call('HSET', h, 'state', 'suspect', 'owner', '', 'entry', '', 'since', now)
        redis.call('RPUSH', SQ, id)
        out[2] = out[2] + 1
      end
    end
  end
end
if #redis.call('XPENDING', JOBS, G, '-', '+', 1, ARGV[6]) > 0 or #redis.call('XPENDING', SUSP, G, '-', '+', 1, ARGV[6]) > 0 then
  -- Busy: report how long the oldest waiting suspect has waited (ms), so
  -- a busy worker can drain itself to take it.
  local head = redis.call('LINDEX', SQ, 0)
  if head then
    local since = tonumber(redis.call('HGET', P .. 'job:' .. head, 'since') or '')
    if since then out[3] = math.max(now - since, 0) end
  end
  return out
end
while true do
  local id = redis.call('LPOP', SQ)
  if not id then break end
  local h = P .. 'job:' .. id
  if redis.call('HGET', h, 'state') == 'suspect' then
    local eid = redis.call('XADD', SUSP, '*', 'id', id)
    redis.call('XCLAIM', SUSP, G, ARGV[6], 0, eid, 'FORCE', 'JUSTID')
    local attempt = redis.call('HINCRBY', h, 'attempt', 1)
    local tok = ARGV[4] .. '.s'
    redis.call('HSET', h, 'state', 'running', 'owner', tok, 'entry', 's' .. eid)
    table.insert(out, id); table.insert(out, redis.call('HGET', h, 'data'))
    table.insert(out, attempt); table.insert(out, tok); table.insert(out, eid)
    break
  end
end
return out
`}

// ARGV[4] token, then pairs entry, id. Returns leases as reclaimScript does.
// The same call again (same token: a client that resent it after losing
// the reply) returns the same leases instead of settling the entries as
// stale, which would leave each job running with no pending entry for the
// reclaim scan to find — stuck, and its chat behind it.
var startScript = &luascript.Script{Src: luaPrelude + `
local out = {}
for i = 5, #ARGV, 2 do
  local eid, id = ARGV[i], ARGV[i + 1]
  local h = P .. 'job:' .. id
  local tok = ARGV[4] .. '.' .. i
  if redis.call('HGET', h, 'state') == 'running' and redis.call('HGET', h, 'entry') == eid and redis.call('HGET', h, 'owner') == tok then
    table.insert(out, id); table.insert(out, redis.call('HGET', h, 'data'))
    table.insert(out, tonumber(redis.call('HGET', h, 'attempt'))); table.insert(out, tok); table.insert(out, eid)
  elseif redis.call('HGET', h, 'state') ~= 'ready' or redis.call('HGET', h, 'entry') ~= eid then
    redis.call('XACK', JOBS, G, eid)
  elseif redis.call('HGET', h, 'cancel') == '1' then
    finish(id, sysresult(id, 'canceled', redis.call('HGET', h, 'attempt'), 'queue: canceled before it ran'))
  else
    local attempt = redis.call('HINCRBY', h, 'attempt', 1)
    redis.call('HSET', h, 'state', 'running', 'owner', tok)
    table.insert(out, id); table.insert(out, redis.call('HGET', h, 'data'))
    table.insert(out, attempt); table.insert(out, tok); table.insert(out, eid)
  end
end
return out
`}

// ARGV[4] id, [5] token, [6] consumer.
var heartbeatScript = &luascript.Script{Src: luaPrelude + `
local h = P .. 'job:' .. ARGV[4]
if redis.call('HGET', h, 'owner') ~= ARGV[5] or redis.call('HGET', h, 'state') ~= 'running' then return 'lost' end
local s, eid = entryof(redis.call('HGET', h, 'entry'))
redis.call('XCLAIM', s, G, ARGV[6], 0, eid, 'JUSTID')
if redis.call('HGET', h, 'cancel') == '1' then return 'canceled' end
return 'ok'
`}

// ARGV[4] id, [5] token, [6] result JSON.
var ackScript = &luascript.Script{Src: luaPrelude + `
local h = P .. 'job:' .. ARGV[4]
if redis.call('HGET', h, 'owner') ~= ARGV[5] or redis.call('HGET', h, 'state') ~= 'running' then return 'lost' end
finish(ARGV[4], ARGV[6])
return 'ok'
`}

// ARGV[4] id.
var cancelScript = &luascript.Script{Src: luaPrelude + `
local id = ARGV[4]
local h = P .. 'job:' .. id
local st = redis.call('HGET', h, 'state')
if (not st) or st == 'done' then return 'notfound' end
if st == 'running' then
  redis.call('HSET', h, 'cancel', '1')
  redis.call('PUBLISH', P .. 'cancel', id)
  return 'ok'
end
finish(id, sysresult(id, 'canceled', redis.call('HGET', h, 'attempt'), 'queue: canceled before it ran'))
return 'ok'
`}

func (r *Redis) base() []any {
	return []any{r.p, r.o.Group, r.o.Retain.Milliseconds()}
}

// Enqueue implements Queue: one EVALSHA.
func (r *Redis) Enqueue(ctx context.Context, job Job) (Job, bool, error) {
	job, data, err := prepareJob(job, r.o, newID)
	if err != nil {
		return job, false, err
	}
	args := append(r.base(), job.ID, data, job.ChatID, job.IdempotencyKey, r.o.DedupeWindow.Milliseconds(), LaneKey(job.ChatID, job.Lane))
	res, err := asSlice(r.cw.runDurable(ctx, enqueueScript, r.ks, args...))
	if err != nil {
		return job, false, fmt.Errorf("queue: enqueue %s: %w", job.ID, err)
	}
	switch res[0].(int64) {
	case 0:
		prevID, _ := res[1].(string)
		prevData, _ := res[2].(string)
		var prev Job
		if prevData == "" || json.Unmarshal([]byte(prevData), &prev) != nil {
			prev = Job{ID: prevID, IdempotencyKey: job.IdempotencyKey}
		}
		return prev, true, nil
	case 2:
		return job, false, fmt.Errorf("%w: id %q already exists", ErrInvalidJob, job.ID)
	}
	return job, false, nil
}

// parseLeases decodes the {id, data, attempt, token, entry}... reply.
func parseLeases(consumer string, v []any) ([]Lease, error) {
	var out []Lease
	for i := 0; i+4 < len(v); i += 5 {
		data, _ := v[i+1].(string)
		var j Job
		if err := json.Unmarshal([]byte(data), &j); err != nil {
			return out, fmt.Errorf("queue: stored job %v is corrupt: %w", v[i], err)
		}
		att, _ := v[i+2].(int64)
		j.Attempt = int(att)
		tok, _ := v[i+3].(string)
		eid, _ := v[i+4].(string)
		out = append(out, Lease{Job: j, Consumer: consumer, token: tok, entry: eid})
	}
	return out, nil
}

// Claim implements Queue: one EVALSHA for expired leases, then one
// XREADGROUP and one EVALSHA for a whole batch of new jobs.
func (r *Redis) Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]Lease, error) {
	if max <= 0 {
		max = 1
	}
	leases, err := r.claim(ctx, consumer, max, block)
	if isNoGroup(err) { // Redis lost its data (restart without persistence)
		if err = r.ensureGroups(ctx); err == nil {
			leases, err = r.claim(ctx, consumer, max, block)
		}
	}
	return leases, err
}

// maxBlockSlice bounds one blocking Redis read. go-redis does not interrupt a
// blocked read when ctx is canceled, so long waits are cut into slices and
// ctx (and expired leases) are checked between them.
const maxBlockSlice = 250 * time.Millisecond

// blockSlice returns the BLOCK argument for the next read of a wait ending at
// end: at most maxBlockSlice, never past ctxEnd (zero: none), and -1 (do not
// block) when less than a millisecond is left, because BLOCK 0 means forever.
func blockSlice(now, end, ctxEnd time.Time) time.Duration {
	d := min(end.Sub(now), maxBlockSlice)
	if !ctxEnd.IsZero() {
		d = min(d, ctxEnd.Sub(now))
	}
	if d < time.Millisecond {
		return -1
	}
	return d
}

// blockLoop calls read with successive block slices until it returns
// something, an error, the wait ends or ctx is done.
func blockLoop[T any](ctx context.Context, block time.Duration, read func(block time.Duration) ([]T, error)) ([]T, error) {
	end := time.Now().Add(block)
	ctxEnd, _ := ctx.Deadline()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := blockSlice(time.Now(), end, ctxEnd)
		out, err := read(b)
		if err != nil || len(out) > 0 || b < 0 {
			return out, err
		}
	}
}

func (r *Redis) claim(ctx context.Context, consumer string, max int, block time.Duration) ([]Lease, error) {
	return blockLoop(ctx, block, func(b time.Duration) ([]Lease, error) { return r.claimOnce(ctx, consumer, max, b) })
}

// claimOnce does one expired-lease scan (if due) and one read of new jobs;
// block < 0 means do not wait.
func (r *Redis) claimOnce(ctx context.Context, consumer string, max int, block time.Duration) ([]Lease, error) {
	var leases []Lease
	now := time.Now().UnixNano()
	if due := r.nextReclaim.Load(); now >= due && r.nextReclaim.CompareAndSwap(due, now+int64(reclaimInterval(r.o.LeaseTTL))) {
		args := append(r.base(), newToken(), r.o.MaxAttempts, consumer, r.o.LeaseTTL.Milliseconds(), reclaimScanCount,
			r.o.ResultsRetain.Milliseconds(), r.o.DeadRetain.Milliseconds(), r.o.DeadMaxLen)
		v, err := reclaimScript.Run(ctx, r.c, r.ks, args...).Slice()
		if err != nil {
			r.nextReclaim.Store(0) // retry the scan on the next call
			return nil, fmt.Errorf("queue: reclaim: %w", err)
		}
		if len(v) >= 3 {
			n, _ := v[0].(int64)
			r.deadLettered.Add(uint64(n))
			n, _ = v[1].(int64)
			r.suspected.Add(uint64(n))
			n, _ = v[2].(int64)
			r.suspectWait.Store(n)
			v = v[3:]
		}
		if leases, err = parseLeases(consumer, v); err != nil || len(leases) > 0 {
			for i := range leases {
				leases[i].Suspect = true // a suspect comes alone
			}
			return leases, err
		}
	}
	streams, err := r.c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: r.o.Group, Consumer: consumer, Streams: []string{r.key("jobs"), ">"},
		Count: int64(max - len(leases)), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return leases, nil
	}
	if err != nil {
		return leases, fmt.Errorf("queue: read jobs: %w", err)
	}
	sargs := append(r.base(), newToken())
	for _, s := range streams {
		for _, m := range s.Messages {
			id, _ := m.Values["id"].(string)
			sargs = append(sargs, m.ID, id)
		}
	}
	if len(sargs) == 4 {
		return leases, nil
	}
	v, err := asSlice(r.co.run(ctx, startScript, r.ks, sargs...))
	if err != nil {
		// The entries stay pending and are reclaimed after LeaseTTL.
		return leases, fmt.Errorf("queue: start jobs: %w", err)
	}
	more, err := parseLeases(consumer, v)
	return append(leases, more...), err
}

// Heartbeat implements Queue: one EVALSHA.
func (r *Redis) Heartbeat(ctx context.Context, l Lease) error {
	v, err := r.co.run(ctx, heartbeatScript, r.ks, append(r.base(), l.Job.ID, l.token, l.Consumer)...)
	return heartbeatErr(l.Job.ID, v, err)
}

// HeartbeatBatch implements HeartbeatBatcher: the heartbeat scripts of all
// leases share round trips (one pipeline per 256).
func (r *Redis) HeartbeatBatch(ctx context.Context, ls []Lease) []error {
	args := make([][]any, len(ls))
	for i, l := range ls {
		args[i] = append(r.base(), l.Job.ID, l.token, l.Consumer)
	}
	vals, errs := r.co.runAll(ctx, heartbeatScript, r.ks, args)
	for i := range ls {
		errs[i] = heartbeatErr(ls[i].Job.ID, vals[i], errs[i])
	}
	return errs
}

func heartbeatErr(id string, v any, err error) error {
	s, err := asText(v, err)
	switch {
	case err != nil:
		return fmt.Errorf("queue: heartbeat %s: %w", id, err)
	case s == "lost":
		return ErrLeaseLost
	case s == "canceled":
		return ErrCanceled
	}
	return nil
}

// Ack implements Queue: one EVALSHA.
func (r *Redis) Ack(ctx context.Context, l Lease, res Result) error {
	_, b, err := encodeResult(l, res, r.o)
	if err != nil {
		return err
	}
	s, err := asText(r.cw.runDurable(ctx, ackScript, r.ks, append(r.base(), l.Job.ID, l.token, b)...))
	if err != nil {
		return fmt.Errorf("queue: ack %s: %w", l.Job.ID, err)
	}
	if s == "lost" {
		return ErrLeaseLost
	}
	return nil
}

// Cancel implements Queue: one EVALSHA. A running job's worker is also told
// on the pub/sub channel <prefix>cancel (payload: job id).
func (r *Redis) Cancel(ctx context.Context, jobID string) error {
	if !validID(jobID) {
		return ErrNotFound
	}
	s, err := asText(r.cw.runDurable(ctx, cancelScript, r.ks, append(r.base(), jobID)...))
	if err != nil {
		return fmt.Errorf("queue: cancel %s: %w", jobID, err)
	}
	if s == "notfound" {
		return ErrNotFound
	}
	return nil
}

// PublishProgress implements Queue: one XADD with approximate MAXLEN.
func (r *Redis) PublishProgress(ctx context.Context, jobID string, data []byte) error {
	if len(data) > r.o.MaxPayloadBytes {
		return &PayloadTooLargeError{What: "progress", Limit: r.o.MaxPayloadBytes, Size: len(data)}
	}
	err := r.c.XAdd(ctx, &redis.XAddArgs{Stream: r.key("progress:", jobID), MaxLen: r.o.ProgressMaxLen, Approx: true,
		Values: []any{"d", data}}).Err()
	if err != nil {
		return fmt.Errorf("queue: publish progress of %s: %w", jobID, err)
	}
	return nil
}

// ReadProgress implements Queue: one XREAD. Entry ids are stream ids.
func (r *Redis) ReadProgress(ctx context.Context, jobID, after string, max int, block time.Duration) ([]Progress, error) {
	if after == "" {
		after = "0-0"
	}
	if max <= 0 {
		max = 100
	}
	return blockLoop(ctx, block, func(b time.Duration) ([]Progress, error) { return r.readProgress(ctx, jobID, after, max, b) })
}

func (r *Redis) readProgress(ctx context.Context, jobID, after string, max int, block time.Duration) ([]Progress, error) {
	streams, err := r.c.XRead(ctx, &redis.XReadArgs{Streams: []string{r.key("progress:", jobID), after}, Count: int64(max), Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue: read progress of %s: %w", jobID, err)
	}
	var out []Progress
	for _, s := range streams {
		for _, m := range s.Messages {
			d, _ := m.Values["d"].(string)
			out = append(out, Progress{ID: m.ID, Data: []byte(d)})
		}
	}
	return out, nil
}

// ReadResults implements Queue: XAUTOCLAIM, XREADGROUP, and one pipelined
// EXISTS per result to skip ones another front end already delivered.
func (r *Redis) ReadResults(ctx context.Context, consumer string, max int, block time.Duration) ([]Delivery, error) {
	if max <= 0 {
		max = 1
	}
	return blockLoop(ctx, block, func(b time.Duration) ([]Delivery, error) {
		ds, err := r.readResults(ctx, consumer, max, b)
		if isNoGroup(err) {
			if err = r.ensureGroups(ctx); err == nil {
				ds, err = r.readResults(ctx, consumer, max, b)
			}
		}
		return ds, err
	})
}

func (r *Redis) readResults(ctx context.Context, consumer string, max int, block time.Duration) ([]Delivery, error) {
	key := r.key("results")
	msgs, _, err := r.c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: key, Group: r.o.ResultsGroup, Consumer: consumer,
		MinIdle: r.o.ResultLeaseTTL, Start: "0-0", Count: int64(max)}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("queue: reclaim results: %w", err)
	}
	if len(msgs) < max {
		b := block
		if len(msgs) > 0 {
			b = -1
		}
		streams, err := r.c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: r.o.ResultsGroup, Consumer: consumer,
			Streams: []string{key, ">"}, Count: int64(max - len(msgs)), Block: b}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("queue: read results: %w", err)
		}
		for _, s := range streams {
			msgs = append(msgs, s.Messages...)
		}
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	pipe := r.c.Pipeline()
	exists := make([]*redis.IntCmd, len(msgs))
	sent := make([]*redis.StringCmd, len(msgs))
	for i, m := range msgs {
		job, _ := m.Values["job"].(string)
		exists[i] = pipe.Exists(ctx, r.key("delivered:", job))
		sent[i] = pipe.Get(ctx, r.key("sent:", job))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("queue: check delivered results: %w", err)
	}
	var out []Delivery
	for i, m := range msgs {
		raw, _ := m.Values["r"].(string)
		var res Result
		if exists[i].Val() == 1 || json.Unmarshal([]byte(raw), &res) != nil {
			// Delivered by another front end, or unreadable: drop it.
			r.c.XAck(ctx, key, r.o.ResultsGroup, m.ID)
			r.c.XDel(ctx, key, m.ID)
			continue
		}
		d := Delivery{ID: m.ID, Result: res}
		if raw, err := sent[i].Bytes(); err == nil {
			var s Sent
			if len(raw) <= 64<<10 && json.Unmarshal(raw, &s) == nil && checkSent(s) == nil {
				d.Sent = s.clone()
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// RecordSent implements SentRecorder: one SET of the job's sent record
// (expiring with the result, ResultsRetain), with the replica wait of
// AckResult, so a failover does not forget how far a delivery got.
func (r *Redis) RecordSent(ctx context.Context, d Delivery, s Sent) error {
	if err := checkSent(s); err != nil {
		return err
	}
	if !validID(d.Result.JobID) {
		return fmt.Errorf("%w: sent record for job id %q", ErrInvalidJob, clip(d.Result.JobID, 40))
	}
	raw, err := json.Marshal(s.clone())
	if err != nil {
		return fmt.Errorf("queue: encode sent record: %w", err)
	}
	return r.waitedWrite(ctx, "record sent of "+d.Result.JobID, func(pipe redis.Pipeliner) {
		// Only while the result is undelivered: a record after AckResult
		// (another front end finished it) is not kept.
		pipe.Eval(ctx, sentScript, []string{r.key("sent:", d.Result.JobID), r.key("delivered:", d.Result.JobID)},
			raw, r.o.ResultsRetain.Milliseconds())
	})
}

// sentScript sets KEYS[1] to ARGV[1] (expiring in ARGV[2] ms) unless the
// result was delivered (KEYS[2] exists).
const sentScript = `if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`

// waitedWrite runs the writes fill adds in one pipeline, with the wait
// for replicas on the same connection when the queue waits (as AckResult).
func (r *Redis) waitedWrite(ctx context.Context, what string, fill func(redis.Pipeliner)) error {
	pipe, cc := r.c.Pipeline(), (*redis.ClusterClient)(nil)
	if w := r.cw.w; w != nil {
		var err error
		if pipe, cc, err = w.pipeline(ctx); err != nil {
			return fmt.Errorf("queue: %s: %w", what, err)
		}
	}
	fill(pipe)
	var wait *redis.IntCmd
	if r.cw.w != nil {
		wait = r.cw.w.add(ctx, pipe)
	}
	_, err := pipe.Exec(ctx)
	if wait != nil {
		n := 1
		if err != nil {
			n = 0
		}
		r.cw.w.settle(wait, n, cc, err)
	}
	if err != nil {
		return fmt.Errorf("queue: %s: %w", what, err)
	}
	return nil
}

// AckResult implements Queue: SET NX, XACK, XDEL and the DEL of the sent
// record in one pipeline (with
// the WAIT for replicas, when the queue waits, on the same connection).
func (r *Redis) AckResult(ctx context.Context, d Delivery) error {
	key := r.key("results")
	return r.waitedWrite(ctx, "ack result of "+d.Result.JobID, func(pipe redis.Pipeliner) {
		pipe.SetNX(ctx, r.key("delivered:", d.Result.JobID), "1", r.o.Retain)
		pipe.XAck(ctx, key, r.o.ResultsGroup, d.ID)
		pipe.XDel(ctx, key, d.ID)
		pipe.Del(ctx, r.key("sent:", d.Result.JobID))
	})
}

// DeadLetters implements Operator; each job carries the attempt it died at.
func (r *Redis) DeadLetters(ctx context.Context, max int64) ([]Job, error) {
	if max <= 0 {
		max = 1 << 62
	}
	msgs, err := r.c.XRangeN(ctx, r.key("dead"), "-", "+", max).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: read dead letters: %w", err)
	}
	var out []Job
	for _, m := range msgs {
		data, _ := m.Values["data"].(string)
		var j Job
		if json.Unmarshal([]byte(data), &j) != nil {
			continue
		}
		j.Attempt, _ = strconv.Atoi(fmt.Sprint(m.Values["attempt"]))
		out = append(out, j)
	}
	return out, nil
}

func asSlice(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	s, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("queue: unexpected script reply %T", v)
	}
	return s, nil
}

func asText(v any, err error) (string, error) {
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("queue: unexpected script reply %T", v)
	}
	return s, nil
}
