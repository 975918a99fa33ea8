package embedded_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// TestSentRecordSurvivesCrash: a result's delivery progress is on disk
// when RecordSent returns: a copy of the file taken while the store is
// still open (what a SIGKILL leaves) hands the result out again with the
// record; after AckResult neither the result nor the record comes back.
func TestSentRecordSurvivesCrash(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s := openT(t, filepath.Join(dir, "store.db"), queue.Options{})
	if _, _, err := s.Enqueue(ctx, queue.Job{ChatID: 5, Goal: "g"}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Claim(ctx, "w", 1, time.Second)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Claim = %d, %v", len(ls), err)
	}
	if err := s.Ack(ctx, ls[0], queue.Result{Answer: "long answer"}); err != nil {
		t.Fatal(err)
	}
	ds, err := s.ReadResults(ctx, "bot", 1, time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("ReadResults = %d, %v", len(ds), err)
	}
	want := queue.Sent{Steps: 2, MessageIDs: []int{10, 11}}
	if err := s.RecordSent(ctx, ds[0], want); err != nil {
		t.Fatal(err)
	}
	crashCopy := func(name string) string {
		raw, err := os.ReadFile(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := openT(t, crashCopy("crash1.db"), queue.Options{})
	got, err := c.ReadResults(ctx, "bot", 1, time.Second)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Sent, want) {
		t.Fatalf("after the crash ReadResults = %+v, %v; want the result with sent %+v", got, err, want)
	}
	if err := s.AckResult(ctx, ds[0]); err != nil {
		t.Fatal(err)
	}
	c2 := openT(t, crashCopy("crash2.db"), queue.Options{})
	if got, err := c2.ReadResults(ctx, "bot", 1, 200*time.Millisecond); err != nil || len(got) != 0 {
		t.Fatalf("after AckResult and a crash ReadResults = %+v, %v; want nothing", got, err)
	}
}
