package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
)

func TestFileStateRoundTrip(t *testing.T) {
	f := fileState{path: filepath.Join(t.TempDir(), "sub", "bot.json")}
	ctx := context.Background()
	if b, err := f.Load(ctx); b != nil || err != nil {
		t.Fatalf("missing file: %q %v", b, err)
	}
	for _, want := range []string{`{"version":1}`, `{"version":1,"chats":{}}`} {
		if err := f.Save(ctx, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got, err := f.Load(ctx); string(got) != want || err != nil {
			t.Fatalf("Load = %q %v, want %q", got, err, want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(f.path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if fi, _ := os.Stat(filepath.Dir(f.path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory mode %v, want 0700", fi.Mode().Perm())
	}
}

// TestImportOldOnce: the old state file and ledger directory are imported
// into the store once (a second start changes nothing, even after the
// store's state moved on), bad ledger files are skipped, and notes are
// left beside the old files.
func TestImportOldOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	statePath := filepath.Join(dir, "bot.json")
	ledgerDir := filepath.Join(dir, "telegram-status")
	if err := os.WriteFile(statePath, []byte(`{"version":1,"chats":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ledgerDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"5_7.json":  `{"chat":5,"msg":7,"job":"j1","since":"2026-01-01T00:00:00Z"}`,
		"6_8.json":  `{"chat":6,"msg":8}`,
		"bad.json":  `{`,
		"0_0.json":  `{"chat":0,"msg":0}`,
		"notes.txt": `x`,
	} {
		if err := os.WriteFile(filepath.Join(ledgerDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := estore.Open(filepath.Join(dir, "store.db"), queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, n, err := importOld(ctx, s, statePath, ledgerDir, time.Now())
	if err != nil || !st || n != 2 {
		t.Fatalf("first import = state %v, %d ledger entries, %v; want the state and 2 entries", st, n, err)
	}
	if err := (storeState{s}).Save(ctx, []byte(`{"version":1,"newer":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := (storeLedger{s}).Delete(ctx, 5, 7); err != nil {
		t.Fatal(err)
	}
	st, n, err = importOld(ctx, s, statePath, ledgerDir, time.Now())
	if err != nil || st || n != 0 {
		t.Fatalf("second import = state %v, %d entries, %v; want nothing", st, n, err)
	}
	if got, _ := (storeState{s}).Load(ctx); string(got) != `{"version":1,"newer":true}` {
		t.Fatalf("the store's newer state was overwritten: %s", got)
	}
	es, err := storeLedger{s}.List(ctx)
	if err != nil || len(es) != 1 || es[0].Chat != 6 || es[0].Msg != 8 {
		t.Fatalf("ledger after the second import = %+v, %v; want only 6/8", es, err)
	}
	for _, note := range []string{statePath + ".imported.txt", filepath.Join(ledgerDir, "IMPORTED.txt")} {
		if b, err := os.ReadFile(note); err != nil || !strings.Contains(string(b), "no longer reads") {
			t.Errorf("note %s: %q %v", note, b, err)
		}
	}
}

// FuzzParseLedger: ledger entries read back (from the store or an old
// ledger directory) never panic, and what parses names a message.
func FuzzParseLedger(f *testing.F) {
	for _, s := range []string{`{"chat":5,"msg":7,"job":"j","lang":"de","since":"2026-01-01T00:00:00Z"}`, `{"chat":0,"msg":1}`, `{`, `null`, `{"chat":-100123,"msg":2147483647}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseLedger(b)
		if err == nil && (e.Chat == 0 || e.Msg <= 0 || len(b) > queue.MaxStatusEntryBytes) {
			t.Fatalf("accepted %q as %+v", b, e)
		}
	})
}
