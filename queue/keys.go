package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
// Skipped. Run it with workers and bot stopped. Single node and Sentinel
// only: the old layout never ran on a cluster (on one, Migrate scans every
// master and renames key by key, and a clash across slots is reported as
// an error).
func Migrate(ctx context.Context, c redis.UniversalClient, prefix string) (MigrateReport, error) {
	var rep MigrateReport
	old := legacyPrefix(prefix)
	if old == "" {
		return rep, nil
	}
	neu := KeyPrefix(prefix)
	var keys []string
	scan := func(ctx context.Context, n redis.UniversalClient) error {
		for _, f := range legacyFixed {
			ok, err := n.Exists(ctx, old+f).Result()
			if err != nil {
				return err
			}
			if ok > 0 {
				keys = append(keys, old+f)
			}
		}
		for _, p := range legacyPer {
			it := n.Scan(ctx, 0, escapeGlob(old+p)+"*", 1000).Iterator()
			for it.Next(ctx) {
				keys = append(keys, it.Val())
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
	for _, k := range keys {
		nk := neu + strings.TrimPrefix(k, old)
		ok, err := c.RenameNX(ctx, k, nk).Result()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				continue // moved by a concurrent run
			}
			return rep, fmt.Errorf("queue: migrate %s: %w", k, err)
		}
		if ok {
			rep.Moved++
			continue
		}
		// The new name exists: overwrite it only if it is an empty stream.
		typ, _ := c.Type(ctx, nk).Result()
		if n, err := c.XLen(ctx, nk).Result(); typ == "stream" && err == nil && n == 0 {
			if err := c.Rename(ctx, k, nk).Err(); err != nil {
				return rep, fmt.Errorf("queue: migrate %s: %w", k, err)
			}
			rep.Moved++
			continue
		}
		rep.Skipped = append(rep.Skipped, k)
	}
	return rep, nil
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
