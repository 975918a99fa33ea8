package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/internal/session/sessiontest"
)

func newFileStore(t *testing.T) session.Store {
	return &session.FileStore{Dir: filepath.Join(t.TempDir(), "sessions")}
}

func TestFileStoreContract(t *testing.T) {
	sessiontest.Run(t, newFileStore)
}

func TestFileStoreModesAndNoTempLeft(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	st := &session.FileStore{Dir: dir}
	s := sessiontest.Sample(10)
	for range 3 {
		if err := st.Save(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := di.Mode().Perm(); m != 0o700 {
		t.Fatalf("dir mode %o, want 700", m)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != s.ID+".json" {
		t.Fatalf("dir holds %v, want only %s.json (no temp files)", ents, s.ID)
	}
	fi, err := os.Stat(filepath.Join(dir, s.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("file mode %o, want 600", m)
	}
}

// A failed save leaves the previous file whole and removes its temp file.
func TestFileStoreFailedSaveKeepsOld(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := filepath.Join(t.TempDir(), "sessions")
	st := &session.FileStore{Dir: dir}
	ctx := context.Background()
	s := sessiontest.Sample(2)
	if err := st.Save(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	s2 := *s
	s2.Messages = nil
	if err := st.Save(ctx, &s2); err == nil {
		t.Fatal("Save into a read-only directory succeeded")
	}
	got, err := st.Load(ctx, s.ID)
	if err != nil || len(got.Messages) != len(s.Messages) {
		t.Fatalf("old session damaged: %v", err)
	}
}

// Injection attempts never touch files outside the store.
func TestFileStoreIDInjection(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "sessions")
	st := &session.FileStore{Dir: dir}
	ctx := context.Background()
	if err := st.Save(ctx, sessiontest.Sample(0)); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(root, "victim.json")
	if err := os.WriteFile(victim, []byte(`{"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"../../victim", "../../victim.json", victim, strings.TrimSuffix(victim, ".json"), "victim\x00", "../../etc/passwd", "/etc/passwd"} {
		if err := st.Delete(ctx, id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Delete(%q) = %v", id, err)
		}
		if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("Load(%q) = %v", id, err)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("victim file gone: %v", err)
	}
}

func TestFileStoreCorruptAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	st := &session.FileStore{Dir: dir}
	ctx := context.Background()
	id := session.NewID()
	// Non-session files are ignored by List.
	for name, data := range map[string]string{"notes.txt": "x", "UPPER0123456789abcdef0123456789ab.json": "{}", ".tmp-x.json-1": "{"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := st.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("List = %v, %v", l, err)
	}
	for name, data := range map[string]string{
		"garbage":      "{not json",
		"wrong id":     `{"version":1,"id":"` + session.NewID() + `","messages":[]}`,
		"wrong format": `{"version":99,"id":"` + id + `","messages":[]}`,
		"bad ref":      `{"version":1,"id":"` + id + `","external_refs":[{"kind":"A","uri":"u","created_by":"c"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrCorrupt) {
			t.Errorf("%s: Load = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := session.NewID()
		if err := session.ValidateID(id); err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
	for _, id := range sessiontest.InvalidIDs {
		if err := session.ValidateID(id); !errors.Is(err, session.ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
}

func BenchmarkFileStoreSave2000(b *testing.B) {
	st := &session.FileStore{Dir: b.TempDir()}
	s := sessiontest.Sample(2000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := st.Save(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/save")
}

func BenchmarkFileStoreLoad2000(b *testing.B) {
	st := &session.FileStore{Dir: b.TempDir()}
	s := sessiontest.Sample(2000)
	ctx := context.Background()
	if err := st.Save(ctx, s); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Load(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
	}
}
