package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
