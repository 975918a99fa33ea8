package queue_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// statusLedgerSuite checks a status ledger's contract: put, list, delete
// (of an absent entry too), overwrite of the same message.
func statusLedgerSuite(t *testing.T, l interface {
	Put(context.Context, queue.StatusEntry) error
	Delete(context.Context, int64, int) error
	List(context.Context) ([]queue.StatusEntry, error)
}) {
	ctx := context.Background()
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if es, err := l.List(ctx); err != nil || len(es) != 0 {
		t.Fatalf("empty ledger lists %v, %v", es, err)
	}
	for _, e := range []queue.StatusEntry{{Chat: 1001, Msg: 5, Job: "j1", Lang: "de", Since: since}, {Chat: -100, Msg: 7, Job: "j2", Lang: "en", Since: since}, {Chat: 1001, Msg: 5, Job: "j1", Lang: "de", Since: since}} {
		if err := l.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	es, err := l.List(ctx)
	if err != nil || len(es) != 2 {
		t.Fatalf("List = %+v, %v; want 2 entries", es, err)
	}
	if err := l.Delete(ctx, 1001, 5); err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx, 1001, 999); err != nil {
		t.Fatalf("deleting an absent entry: %v", err)
	}
	es, _ = l.List(ctx)
	if len(es) != 1 || es[0] != (queue.StatusEntry{Chat: -100, Msg: 7, Job: "j2", Lang: "en", Since: since}) {
		t.Fatalf("after delete: %+v", es)
	}
}

func TestFileStatusLedger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	statusLedgerSuite(t, queue.FileStatusLedger{Dir: dir})
	// A damaged entry is reported and removed, the others still listed.
	os.WriteFile(filepath.Join(dir, "1_2.json"), []byte("{not json"), 0o600)
	es, err := queue.FileStatusLedger{Dir: dir}.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "1_2.json") || len(es) != 1 {
		t.Errorf("damaged entry: %+v, %v", es, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "1_2.json")); !os.IsNotExist(err) {
		t.Errorf("damaged entry kept: %v", err)
	}
}

func TestRedisStatusLedger(t *testing.T) {
	rc := queuetest.StartRedis(t)
	l := queue.RedisStatusLedger{Client: rc, Key: queue.StatusLedgerKey("odek:test:")}
	statusLedgerSuite(t, l)
	// A damaged entry is reported and removed.
	rc.HSet(context.Background(), l.Key, "1_2", "{not json")
	es, err := l.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "1_2") || len(es) != 1 {
		t.Errorf("damaged entry: %+v, %v", es, err)
	}
	if n, _ := rc.HLen(context.Background(), l.Key).Result(); n != 1 {
		t.Errorf("damaged entry kept: %d fields", n)
	}
}

func FuzzStatusEntry(f *testing.F) {
	f.Add([]byte(`{"chat":1001,"msg":5,"job":"j","lang":"de","since":"2026-03-01T12:00:00Z"}`))
	f.Add([]byte(`{"chat":0,"msg":5}`))
	f.Add([]byte(`{"chat":1,"msg":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := queue.ParseStatusEntry(data)
		if err != nil {
			return
		}
		if e.Chat == 0 || e.Msg <= 0 || len(data) > queue.MaxStatusEntryBytes {
			t.Fatalf("accepted %+v", e)
		}
	})
}
