package embedded_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
)

// TestAdminInspection: stats, one job and the dead letters read through
// the holder's admin socket are what the store itself answers; a bad
// argument is refused naming it; with no holder the client says the
// socket does not answer.
func TestAdminInspection(t *testing.T) {
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "store.db")
	s := openT(t, path, queue.Options{MaxAttempts: 1, LeaseTTL: 50 * time.Millisecond})
	a := embedded.DialAdmin(path)
	defer a.Close()
	if err := a.Ping(ctx); err == nil || !strings.Contains(err.Error(), embedded.SocketPath(path)) {
		t.Fatalf("Ping before ServeAdmin = %v; want an error naming the socket", err)
	}
	if err := s.ServeAdmin(); err != nil {
		t.Fatal(err)
	}
	queued, _, err := s.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "waits"})
	if err != nil {
		t.Fatal(err)
	}
	// A job whose worker dies alone once is dead-lettered (MaxAttempts 1).
	if _, _, err := s.Enqueue(ctx, queue.Job{ChatID: 2, Goal: "dies"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "w1", 2, time.Second); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if st, _ := s.Stats(ctx); st.Dead == 1 {
			break
		}
		_, _ = s.Claim(ctx, "w2", 1, 100*time.Millisecond) // settles expired leases
	}
	want, err := s.Stats(ctx)
	if err != nil || want.Dead != 1 {
		t.Fatalf("Stats = %+v, %v; want one dead letter", want, err)
	}
	got, err := a.Stats(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Stats through the socket = %+v, %v; want %+v", got, err, want)
	}
	wi, wok, _ := s.Inspect(ctx, queued.ID)
	gi, gok, err := a.Inspect(ctx, queued.ID)
	if err != nil || !gok || !wok || gi.Job.ID != wi.Job.ID || gi.State != wi.State || gi.Attempt != wi.Attempt || !gi.Job.CreatedAt.Equal(wi.Job.CreatedAt) {
		t.Errorf("Inspect through the socket = %+v %v %v; want %+v", gi, gok, err, wi)
	}
	if _, ok, err := a.Inspect(ctx, "no-such-job"); err != nil || ok {
		t.Errorf("Inspect of an unknown job = %v, %v; want not found", ok, err)
	}
	if _, _, err := a.Inspect(ctx, strings.Repeat("x", queue.MaxIDLen+1)); err == nil || !strings.Contains(err.Error(), "id:") {
		t.Errorf("Inspect of an over-long id = %v; want an error naming id", err)
	}
	wd, _ := s.DeadEntries(ctx, 0)
	gd, err := a.DeadEntries(ctx, 0)
	if err != nil || len(gd) != 1 || len(wd) != 1 || gd[0].Job.ID != wd[0].Job.ID || gd[0].Strikes != wd[0].Strikes || !gd[0].At.Equal(wd[0].At) {
		t.Errorf("DeadEntries through the socket = %+v, %v; want %+v", gd, err, wd)
	}
}
