package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// KeyPrefix is the prefix every queue key starts with for the configured
// Options.Prefix: the prefix itself when it holds a Redis Cluster hash tag
// ("{...}" with something inside), else the prefix wrapped in one, the
// trailing ':' kept outside ("odek:" → "{odek}:", "team" → "{team}").
// All keys of one queue so hash to one cluster slot, which is what lets
// every script and MULTI of the queue run on Redis Cluster. See
// docs/QUEUE.md "Key layout and Redis Cluster".
func KeyPrefix(prefix string) string {
	if prefix == "" {
		prefix = "odek:"
	}
	if hasHashTag(prefix) {
		return prefix
	}
	if p, ok := strings.CutSuffix(prefix, ":"); ok {
		return "{" + p + "}:"
	}
	return "{" + prefix + "}"
}

// hasHashTag reports whether Redis Cluster hashes key s by a tag: the text
// between the first '{' and the next '}', when it is not empty.
func hasHashTag(s string) bool {
	i := strings.IndexByte(s, '{')
	if i < 0 {
		return false
	}
	j := strings.IndexByte(s[i+1:], '}')
	return j > 0
}

// legacyQueueKeys are the queue's key names (after the prefix) before the
// hash tag: fixed names, then name prefixes of per-job, per-chat and
// per-worker keys. Session keys (session:, sessions) and the bot's ledger
// share the old prefix but are not queue keys: they stay where they are.
var (
	legacyFixed = []string{"jobs", "suspects", "results", "approvals", "dead", "unfinished", "suspect-queue", "config", "workers"}
	legacyPer   = []string{"job:", "chat:", "idem:", "progress:", "delivered:", "approval:", "asking:", "answer:", "worker:"}
)

// ErrLegacyLayout is returned by NewRedis when Redis holds queue data in
// the key layout of odek before the hash tag ("odek:jobs" rather than
// "{odek}:jobs"): a worker on the new layout would not see those jobs.
// `odek queue migrate` moves them.
var ErrLegacyLayout = errors.New("queue: Redis holds queue data in the old key layout (no hash tag); stop the workers and the bot and run `odek queue migrate`")

// legacyPrefix is the untagged prefix the old layout used, or "" when the
// configured prefix already had a tag (nothing to migrate from).
func legacyPrefix(prefix string) string {
	if prefix == "" {
		prefix = "odek:"
	}
	if hasHashTag(prefix) {
		return ""
	}
	return prefix
}

// LegacyKeys are the keys whose presence means queue data in the old
// layout for prefix (none when prefix has a hash tag already).
func LegacyKeys(prefix string) []string {
	old := legacyPrefix(prefix)
	if old == "" {
		return nil
	}
	return []string{old + "unfinished", old + "jobs", old + "results"}
}

// checkLayout fails with ErrLegacyLayout when the old layout's unfinished
// counter or jobs stream exists.
func checkLayout(ctx context.Context, c redis.UniversalClient, prefix string) error {
	for _, k := range LegacyKeys(prefix) {
		n, err := c.Exists(ctx, k).Result()
		if err != nil {
			return fmt.Errorf("queue: check for the old key layout: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("%w (found %s)", ErrLegacyLayout, k)
		}
	}
	return nil
}

// MigrateReport says what Migrate did.
type MigrateReport struct {
	Moved   int      // keys renamed to the new layout
	Skipped []string // old keys left because the new name holds data
}

// Migrate renames the queue keys of the old layout (prefix without a hash
// tag) to the tagged layout KeyPrefix gives. It is idempotent: a second run
// finds nothing to move. A new key that already exists is overwritten only
// when it is an empty stream (the consumer groups a worker on the new
// layout creates at start); any other clash is left alone and reported in
// Skipped. Run it with workers and bot stopped. On a cluster (where the
// old names hash to other slots than the new ones) it scans every master
// and moves each key with DUMP, RESTORE and DEL instead of RENAME.
func Migrate(ctx context.Context, c redis.UniversalClient, prefix string) (MigrateReport, error) {
	var rep MigrateReport
	old := legacyPrefix(prefix)
	if old == "" {
		return rep, nil
	}
	neu := KeyPrefix(prefix)
	var keys []string
	// Fixed names through c, which routes each to its slot's node.
	for _, f := range legacyFixed {
		ok, err := c.Exists(ctx, old+f).Result()
		if err != nil {
			return rep, fmt.Errorf("queue: migrate: list old keys: %w", err)
		}
		if ok > 0 {
			keys = append(keys, old+f)
		}
	}
	// The per-job, per-chat and per-worker names by SCAN on every master.
	var mu sync.Mutex
	scan := func(ctx context.Context, n redis.UniversalClient) error {
		for _, p := range legacyPer {
			it := n.Scan(ctx, 0, escapeGlob(old+p)+"*", 1000).Iterator()
			for it.Next(ctx) {
				mu.Lock()
				keys = append(keys, it.Val())
				mu.Unlock()
			}
			if err := it.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	} else {
		err = scan(ctx, c)
	}
	if err != nil {
		return rep, fmt.Errorf("queue: migrate: list old keys: %w", err)
	}
	_, cluster := c.(*redis.ClusterClient)
	for _, k := range keys {
		nk := neu + strings.TrimPrefix(k, old)
		var moved bool
		var err error
		if cluster {
			moved, err = copyKey(ctx, c, k, nk)
		} else {
			moved, err = renameKey(ctx, c, k, nk)
		}
		if err != nil {
			return rep, fmt.Errorf("queue: migrate %s: %w", k, err)
		}
		if moved {
			rep.Moved++
		} else if n, _ := c.Exists(ctx, k).Result(); n > 0 {
			rep.Skipped = append(rep.Skipped, k)
		}
	}
	return rep, nil
}

// renameKey moves k to nk on one node: RENAMENX, or RENAME over an empty
// stream. moved is false for a clash it leaves alone and for a key a
// concurrent run moved.
func renameKey(ctx context.Context, c redis.UniversalClient, k, nk string) (bool, error) {
	ok, err := c.RenameNX(ctx, k, nk).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return false, nil // moved by a concurrent run
		}
		return false, err
	}
	if ok {
		return true, nil
	}
	if emptyStream(ctx, c, nk) {
		return true, c.Rename(ctx, k, nk).Err()
	}
	return false, nil
}

// copyKey moves k to nk across cluster slots, where RENAME is refused
// (CROSSSLOT): DUMP and PTTL of k, RESTORE as nk (over an empty stream
// only), then DEL k. A run cut off between RESTORE and DEL is finished by
// the next: nk then holds exactly k's serialized value, so k is deleted.
func copyKey(ctx context.Context, c redis.UniversalClient, k, nk string) (bool, error) {
	dump, err := c.Dump(ctx, k).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil // moved by a concurrent run
	}
	if err != nil {
		return false, err
	}
	ttl, err := c.PTTL(ctx, k).Result()
	if err != nil {
		return false, err
	}
	switch {
	case ttl == -2: // gone meanwhile (go-redis keeps -2 and -1 as they are)
		return false, nil
	case ttl < 0:
		ttl = 0 // RESTORE's "no expiry"
	}
	err = c.Restore(ctx, nk, ttl, dump).Err()
	if err != nil && strings.HasPrefix(err.Error(), "BUSYKEY") {
		switch {
		case emptyStream(ctx, c, nk):
			err = c.RestoreReplace(ctx, nk, ttl, dump).Err()
		default:
			if have, _ := c.Dump(ctx, nk).Result(); have != dump {
				return false, nil // a clash: left alone, reported
			}
			err = nil // an earlier run copied it and stopped before DEL
		}
	}
	if err != nil {
		return false, err
	}
	return true, c.Del(ctx, k).Err()
}

// emptyStream reports whether k is a stream without entries (the groups a
// worker on the new layout created at start).
func emptyStream(ctx context.Context, c redis.UniversalClient, k string) bool {
	typ, _ := c.Type(ctx, k).Result()
	n, err := c.XLen(ctx, k).Result()
	return typ == "stream" && err == nil && n == 0
}

// escapeGlob quotes the glob characters of s for SCAN MATCH.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
