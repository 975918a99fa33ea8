package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/internal/session/sessiontest"
	"github.com/odekrun/odek/queue/queuetest"
)

// The store's contract holds on one node, behind Sentinel and on a 3+3
// cluster (where a session and the index live in different slots).
func TestRedisStoreContract(t *testing.T) {
	queuetest.EachTopology(t, func(t *testing.T, tp *queuetest.Topology) {
		c := tp.Client()
		var n atomic.Int64
		sessiontest.Run(t, func(t *testing.T) session.Store {
			return &session.RedisStore{Client: c, Prefix: fmt.Sprintf("t%d:", n.Add(1))}
		})
	})
}

// Every key lives under the prefix, corrupt data is ErrCorrupt, and TTL
// expires sessions.
func TestRedisStoreKeysCorruptionAndTTL(t *testing.T) {
	c := queuetest.StartRedis(t)
	ctx := context.Background()
	st := &session.RedisStore{Client: c, Prefix: "chat-sessions:", TTL: time.Hour}
	s := sessiontest.Sample(2)
	if err := st.Save(ctx, s); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "chat-sessions:") {
			t.Errorf("key %q outside the prefix", k)
		}
	}
	if len(keys) != 2 {
		t.Fatalf("keys %v, want the session and the index", keys)
	}
	if ttl := c.TTL(ctx, "chat-sessions:session:"+s.ID).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("session TTL %v, want (0, 1h]", ttl)
	}
	for _, bad := range []string{"{not json", `{"version":9,"id":"` + s.ID + `"}`, `{"version":1,"id":"0123456789abcdef0123456789abcdef"}`} {
		c.Set(ctx, "chat-sessions:session:"+s.ID, bad, 0)
		if _, err := st.Load(ctx, s.ID); !errors.Is(err, session.ErrCorrupt) {
			t.Errorf("Load of %q = %v, want ErrCorrupt", bad, err)
		}
	}
	// An index entry whose session expired is skipped by List and Latest.
	other := sessiontest.Sample(0)
	if err := st.Save(ctx, other); err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, "chat-sessions:session:"+other.ID, "chat-sessions:session:"+s.ID)
	if l, err := st.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("List with expired sessions = %v, %v", l, err)
	}
	if _, err := st.Latest(ctx); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Latest with expired sessions = %v", err)
	}
	if err := (&session.RedisStore{}).Save(ctx, s); err == nil {
		t.Fatal("Save without a client succeeded")
	}
}
