package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxRedisBytes bounds one session's encoding in RedisStore.
const MaxRedisBytes = 64 << 20

// RedisStore keeps sessions in Redis so any worker can continue any chat.
// Keys (Prefix "odek:" by default):
//
//	<prefix>session:<id>  string: the session JSON (same format as a FileStore file)
//	<prefix>sessions      sorted set: id scored by UpdatedAt (unix µs), for Latest and List
//
// The two keys hash to different Redis Cluster slots (sessions spread over
// the cluster's masters), so no command spans both: Save writes the session
// (one SET: a reader sees the old or the new session, never a mix) and then
// indexes it; Delete removes the session and then its index entry. A crash
// between the two leaves an index entry without a session, which Latest and
// List skip, or a session missing from the index until its next Save.
// The zero value is not usable: Client must be set.
// Safe for concurrent use by many goroutines and processes; the last Save
// of an id wins. The Client stays owned by the caller.
type RedisStore struct {
	// Client is the Redis connection (one node, Sentinel or Cluster).
	// Required.
	Client redis.UniversalClient
	// Prefix starts every key; "" means "odek:".
	Prefix string
	// TTL expires a session this long after its last Save; 0 means never.
	// An expired session disappears from List on the next Save or List.
	TTL time.Duration
	// Now stamps CreatedAt/UpdatedAt; nil means time.Now.
	Now func() time.Time
}

var _ Store = (*RedisStore)(nil)

func (r *RedisStore) prefix() string {
	if r.Prefix == "" {
		return "odek:"
	}
	return r.Prefix
}

func (r *RedisStore) key(id string) string { return r.prefix() + "session:" + id }
func (r *RedisStore) index() string        { return r.prefix() + "sessions" }

func (r *RedisStore) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

func (r *RedisStore) client() (redis.UniversalClient, error) {
	if r.Client == nil {
		return nil, errors.New("session: RedisStore.Client is nil")
	}
	return r.Client, nil
}

// Save implements Store.
func (r *RedisStore) Save(ctx context.Context, s *Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	now := r.now()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	s.UpdatedAt = now
	b, err := json.Marshal(fileData{Version: fileVersion, Session: s})
	if err != nil {
		return fmt.Errorf("session: encoding %s: %w", s.ID, err)
	}
	if len(b) > MaxRedisBytes {
		return fmt.Errorf("session: %s encodes to %d bytes, exceeding the limit MaxRedisBytes=%d", s.ID, len(b), MaxRedisBytes)
	}
	if err := c.Set(ctx, r.key(s.ID), b, r.TTL).Err(); err != nil {
		return fmt.Errorf("session: saving %s to redis: %w", s.ID, err)
	}
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error { // one key: one slot
		p.ZAdd(ctx, r.index(), redis.Z{Score: float64(now.UnixMicro()), Member: s.ID})
		if r.TTL > 0 {
			p.ZRemRangeByScore(ctx, r.index(), "-inf", strconv.FormatInt(now.Add(-r.TTL).UnixMicro()-1, 10))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("session: saving %s to redis: %w", s.ID, err)
	}
	return nil
}

// Load implements Store.
func (r *RedisStore) Load(ctx context.Context, id string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	b, err := c.Get(ctx, r.key(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("session: loading %s from redis: %w", id, err)
	}
	if len(b) > MaxRedisBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, over the limit MaxRedisBytes=%d", ErrCorrupt, id, len(b), MaxRedisBytes)
	}
	return decode(id, b)
}

// Latest implements Store: the member with the highest score.
func (r *RedisStore) Latest(ctx context.Context) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	for range 3 { // a session deleted or expired meanwhile: look again
		ids, err := c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: r.index(), Start: 0, Stop: 0, Rev: true}).Result()
		if err != nil {
			return nil, fmt.Errorf("session: latest from redis: %w", err)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("%w: no sessions under %s", ErrNotFound, r.index())
		}
		s, err := r.Load(ctx, ids[0])
		if !errors.Is(err, ErrNotFound) {
			return s, err
		}
		c.ZRem(ctx, r.index(), ids[0])
	}
	return nil, fmt.Errorf("%w: sessions keep disappearing under %s", ErrNotFound, r.index())
}

// List implements Store: the index, then the sessions in pipelines of 100 GETs.
func (r *RedisStore) List(ctx context.Context) ([]Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	ids, err := c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: r.index(), Start: 0, Stop: -1, Rev: true}).Result()
	if err != nil {
		return nil, fmt.Errorf("session: listing redis sessions: %w", err)
	}
	var out []Summary
	for len(ids) > 0 {
		n := min(len(ids), 100)
		batch := ids[:n]
		ids = ids[n:]
		// One pipeline of GETs, not MGET: on a cluster the sessions live
		// in many slots, and a pipeline is split per node.
		p := c.Pipeline()
		gets := make([]*redis.StringCmd, 0, n)
		for _, id := range batch {
			gets = append(gets, p.Get(ctx, r.key(id)))
		}
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("session: listing redis sessions: %w", err)
		}
		for i, g := range gets {
			str, err := g.Result()
			if errors.Is(err, redis.Nil) {
				continue // deleted or expired meanwhile
			}
			if err != nil {
				return nil, fmt.Errorf("session: listing redis sessions: %w", err)
			}
			if ValidateID(batch[i]) != nil {
				continue
			}
			s, err := decode(batch[i], []byte(str))
			if err != nil {
				return nil, err
			}
			out = append(out, Summarize(s))
		}
	}
	sortSummaries(out)
	return out, nil
}

// Delete implements Store.
func (r *RedisStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	if err := ValidateID(id); err != nil {
		return err
	}
	n, err := c.Del(ctx, r.key(id)).Result()
	if err == nil {
		err = c.ZRem(ctx, r.index(), id).Err()
	}
	if err != nil {
		return fmt.Errorf("session: deleting %s from redis: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return nil
}
