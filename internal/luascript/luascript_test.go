package luascript_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/redis/go-redis/v9"
)

const src = `return redis.call('INCRBY', KEYS[1], ARGV[1])`

// A Script behaves as redis.NewScript(src) does against a real Redis:
// the same SHA-1, Run loading the script when Redis lacks it, EvalSha
// finding it once loaded; and its *redis.Script is made once.
func TestScriptAgainstRedis(t *testing.T) {
	c := queuetest.StartRedis(t)
	ctx := context.Background()
	s := &luascript.Script{Src: src}

	if got, want := s.Hash(), redis.NewScript(src).Hash(); got != want {
		t.Fatalf("Hash = %s, want redis.NewScript's %s", got, want)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Not in Redis's cache: EvalSha fails, Run sends the source.
	if err := s.EvalSha(ctx, c, []string{"k"}, 1).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Fatalf("EvalSha before any load: err = %v, want NOSCRIPT", err)
	}
	if n, err := s.Run(ctx, c, []string{"k"}, 2).Int(); err != nil || n != 2 {
		t.Fatalf("Run = %d, %v; want 2", n, err)
	}
	if n, err := s.EvalSha(ctx, c, []string{"k"}, 3).Int(); err != nil || n != 5 {
		t.Fatalf("EvalSha after Run = %d, %v; want 5", n, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Load(ctx, c).Result(); err != nil || h != s.Hash() {
		t.Fatalf("Load = %s, %v; want %s", h, err, s.Hash())
	}
	if n, err := s.EvalSha(ctx, c, []string{"k"}, 1).Int(); err != nil || n != 6 {
		t.Fatalf("EvalSha after Load = %d, %v; want 6", n, err)
	}
}

// Concurrent first uses all get the one *redis.Script.
func TestScriptMadeOnce(t *testing.T) {
	s := &luascript.Script{Src: src}
	var wg sync.WaitGroup
	got := make([]*redis.Script, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = s.Redis() }()
	}
	wg.Wait()
	for i, r := range got {
		if r == nil || r != got[0] {
			t.Fatalf("goroutine %d got %p, goroutine 0 %p", i, r, got[0])
		}
	}
}
