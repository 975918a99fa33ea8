package embedded_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
)

// TestAdminChanges: submit, cancel, retry and purge-dead through the
// holder's admin socket change the holder's own queue (the store sees the
// job at once, and after a reopen: it was durable), refusals carry the
// store's own error and sentinel, and the schedule counts are the store's.
func TestAdminChanges(t *testing.T) {
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "store.db")
	o := queue.Options{MaxAttempts: 1, LeaseTTL: 50 * time.Millisecond}
	s := openT(t, path, o)
	if err := s.ServeAdmin(); err != nil {
		t.Fatal(err)
	}
	a := embedded.DialAdmin(path)
	defer a.Close()

	j, dup, err := a.Enqueue(ctx, queue.Job{ChatID: 5, Goal: "through the socket", IdempotencyKey: "k"})
	if err != nil || dup || j.ID == "" {
		t.Fatalf("Enqueue through the socket = %+v, %v, %v", j, dup, err)
	}
	if info, ok, err := s.Inspect(ctx, j.ID); err != nil || !ok || (info.State != queue.StateQueued && info.State != queue.StateReady) || info.Job.Goal != "through the socket" {
		t.Fatalf("the holder's queue after the submit: %+v %v %v", info, ok, err)
	}
	if j2, dup, err := a.Enqueue(ctx, queue.Job{ChatID: 5, Goal: "again", IdempotencyKey: "k"}); err != nil || !dup || j2.ID != j.ID {
		t.Errorf("second Enqueue with the key = %s %v %v; want the same job, duplicate", j2.ID, dup, err)
	}
	// The store's own validation, message and sentinel.
	_, _, want := s.Enqueue(ctx, queue.Job{ChatID: 0, Goal: "x"})
	_, _, err = a.Enqueue(ctx, queue.Job{ChatID: 0, Goal: "x"})
	if !errors.Is(err, queue.ErrInvalidJob) || want == nil || err.Error() != want.Error() {
		t.Errorf("invalid job through the socket = %v; want the store's %v", err, want)
	}
	_, _, err = a.Enqueue(ctx, queue.Job{ChatID: 1, Goal: strings.Repeat("g", 300<<10)})
	if !errors.Is(err, queue.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "MaxPayloadBytes") {
		t.Errorf("an over-large job through the socket = %v; want the store's payload error", err)
	}
	if err := a.Cancel(ctx, "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Cancel of an unknown job = %v; want ErrNotFound", err)
	}
	if err := a.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if info, _, _ := s.Inspect(ctx, j.ID); info.State == queue.StateQueued {
		t.Errorf("a queued job canceled through the socket is still %s", info.State)
	}

	// A dead letter, retried through the socket, runs again as a new job.
	dead, _, _ := s.Enqueue(ctx, queue.Job{ChatID: 2, Goal: "dies"})
	if _, err := s.Claim(ctx, "w1", 1, time.Second); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if st, _ := s.Stats(ctx); st.Dead == 1 {
			break
		}
		_, _ = s.Claim(ctx, "w2", 1, 100*time.Millisecond)
	}
	if _, err := a.Retry(ctx, "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Retry of an unknown dead letter = %v; want ErrNotFound", err)
	}
	nj, err := a.Retry(ctx, dead.ID)
	if err != nil || nj.ID == "" || nj.ID == dead.ID || nj.Goal != "dies" {
		t.Fatalf("Retry through the socket = %+v, %v", nj, err)
	}
	if info, ok, _ := s.Inspect(ctx, nj.ID); !ok || (info.State != queue.StateQueued && info.State != queue.StateReady) {
		t.Errorf("the retried job in the holder's queue: %+v %v", info, ok)
	}
	if n, err := a.PurgeDead(ctx, 0); err != nil || n != 0 {
		t.Errorf("PurgeDead after the retry = %d, %v; want 0 (the retry took it)", n, err)
	}
	var counts struct{ Schedules, Enabled int }
	if err := a.ScheduleCounts(ctx, &counts); err == nil {
		t.Errorf("ScheduleCounts without a counter = %+v; want an error saying the store keeps no schedules", counts)
	}
	s.ServeScheduleCounts(func(context.Context) (any, error) {
		return struct{ Schedules, Enabled int }{Schedules: 1, Enabled: 1}, nil
	})
	if err := a.ScheduleCounts(ctx, &counts); err != nil || counts.Schedules != 1 || counts.Enabled != 1 {
		t.Errorf("ScheduleCounts = %+v, %v; want the holder's counter's answer", counts, err)
	}
	// Durable: the submitted job is in the file.
	s = reopen(t, s, o)
	if info, ok, _ := s.Inspect(ctx, nj.ID); !ok || info.Job.Goal != "dies" {
		t.Errorf("after a reopen the retried job is %+v %v", info, ok)
	}
}

// TestAdminRequestsRefused: malformed requests on the socket are refused
// with 400 or 413 and an error naming the field or the limit, and change
// nothing.
func TestAdminRequestsRefused(t *testing.T) {
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "store.db")
	s := openT(t, path, queue.Options{})
	if err := s.ServeAdmin(); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", embedded.SocketPath(path))
	}}}
	defer hc.CloseIdleConnections()
	for _, tc := range []struct {
		op, body string
		code     int
		want     string
	}{
		{"submit", `{"chat_id":1,"goal":"g","shell":"rm -rf /"}`, 400, `unknown field "shell"`},
		{"submit", `{"chat_id":1,"goal":"g"} {"chat_id":2}`, 400, "data after the JSON object"},
		{"submit", `null`, 400, "want one JSON object"},
		{"submit", `{"chat_id":"one","goal":"g"}`, 400, "chat_id"},
		{"submit", `{"chat_id":1,"goal":"` + strings.Repeat("x", embedded.MaxAdminRequest) + `"}`, 413, "limit of 1048576 bytes"},
		{"cancel", `{"id":""}`, 400, "id: want a job id"},
		{"cancel", `{"job":"x"}`, 400, `unknown field "job"`},
		{"retry", `{"id":"` + strings.Repeat("a", queue.MaxIDLen+1) + `"}`, 400, "id: want a job id"},
		{"purge-dead", `{}`, 400, "older_than_ns is missing"},
		{"purge-dead", `{"older_than_ns":-5}`, 400, "older_than_ns: want ≥ 0"},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://store/"+tc.op, strings.NewReader(tc.body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var ae struct{ Error, Kind string }
		if err := json.Unmarshal(b, &ae); err != nil || ae.Kind == "" || resp.StatusCode != tc.code || !strings.Contains(ae.Error, tc.want) {
			t.Errorf("POST /%s %.60s: %d %s; want %d and %q", tc.op, tc.body, resp.StatusCode, b, tc.code, tc.want)
		}
	}
	if st, _ := s.Stats(ctx); st.Queued != 0 {
		t.Errorf("refused requests queued %d jobs", st.Queued)
	}
}
