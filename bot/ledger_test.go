package bot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// ledgerSuite checks a StatusLedger's contract: put, list, delete (of an
// absent entry too), overwrite of the same message.
func ledgerSuite(t *testing.T, l StatusLedger) {
	ctx := context.Background()
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if es, err := l.List(ctx); err != nil || len(es) != 0 {
		t.Fatalf("empty ledger lists %v, %v", es, err)
	}
	for _, e := range []LedgerEntry{{Chat: 1001, Msg: 5, Job: "j1", Lang: "de", Since: since}, {Chat: -100, Msg: 7, Job: "j2", Lang: "en", Since: since}, {Chat: 1001, Msg: 5, Job: "j1", Lang: "de", Since: since}} {
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
	if len(es) != 1 || es[0] != (LedgerEntry{Chat: -100, Msg: 7, Job: "j2", Lang: "en", Since: since}) {
		t.Fatalf("after delete: %+v", es)
	}
}

func TestFileLedger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	ledgerSuite(t, FileLedger{Dir: dir})
	// A damaged entry is reported and removed, the others still listed.
	os.WriteFile(filepath.Join(dir, "1_2.json"), []byte("{not json"), 0o600)
	es, err := FileLedger{Dir: dir}.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "1_2.json") || len(es) != 1 {
		t.Errorf("damaged entry: %+v, %v", es, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "1_2.json")); !os.IsNotExist(err) {
		t.Errorf("damaged entry kept: %v", err)
	}
}

func TestRedisLedger(t *testing.T) {
	rc := queuetest.StartRedis(t)
	ledgerSuite(t, RedisLedger{Client: rc, Key: "odek:test:telegram:status-ledger"})
}

func FuzzLedgerEntry(f *testing.F) {
	f.Add([]byte(`{"chat":1001,"msg":5,"job":"j","lang":"de","since":"2026-03-01T12:00:00Z"}`))
	f.Add([]byte(`{"chat":0,"msg":5}`))
	f.Add([]byte(`{"chat":1,"msg":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseLedgerEntry(data)
		if err != nil {
			return
		}
		if e.Chat == 0 || e.Msg <= 0 || (e.Lang != "en" && e.Lang != "de") {
			t.Fatalf("accepted %+v", e)
		}
	})
}

// Issue 17, restarts: a status message left by a process that was killed
// (no shutdown notice, no state file) is edited at the next start to say
// the job was interrupted, in the asker's language.
func TestOrphanedStatusIsCleanedAtStart(t *testing.T) {
	for _, volatile := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "ledger")
		q := queue.NewMemory(queue.Options{})
		h := startBot(t, q, func(c *Config) { c.Ledger = FileLedger{Dir: dir}; c.StatusDelay = -1; c.VolatileQueue = volatile })
		h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "never claimed", Lang: "de"}) // no worker
		h.waitVisible(alice, "⏳ Startet…")
		var entries []string
		h.tg.Wait(t, wait, "the status message in the ledger", func(*bottest.Server) bool {
			des, _ := os.ReadDir(dir)
			entries = nil
			for _, de := range des {
				entries = append(entries, de.Name())
			}
			return len(entries) == 1
		})
		// A SIGKILL leaves the status message and its ledger entry as
		// they are while the job runs. The graceful stop here cannot edit
		// the status (Telegram refuses the edit), so it leaves the same.
		h.tg.FailNext("editMessageText", 1, bottest.Failure{Code: 400, Description: "Bad Request: message can't be edited"})
		h.stop()
		if des, _ := os.ReadDir(dir); len(des) != 1 {
			t.Fatalf("ledger after the stop: %v", des)
		}
		h.run(func(c *Config) { c.Ledger = FileLedger{Dir: dir}; c.VolatileQueue = volatile })
		want := "Falls ein Worker noch daran war, kommt seine Antwort hierher"
		if volatile {
			want = "und sie ging dabei verloren"
		}
		h.waitVisible(alice, "⚠️ Unterbrochen: odek-bot wurde unerwartet beendet")
		h.waitVisible(alice, want)
		h.tg.Wait(t, wait, "the ledger emptied", func(*bottest.Server) bool {
			des, _ := os.ReadDir(dir)
			return len(des) == 0
		})
		for _, v := range h.tg.Visible(alice) {
			if strings.Contains(v, "⏳ Startet") {
				t.Errorf("volatile=%v: a Working status stays: %q", volatile, h.tg.Visible(alice))
			}
		}
		h.stop()
	}
}
