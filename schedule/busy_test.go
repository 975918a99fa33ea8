package schedule

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/queue/queuetest"
)

// A quiet check-in is skipped (status busy, counted) while its chat has
// a job queued or running, and fires again once the chat is idle; a loud
// schedule of the same chat fires regardless. On the memory queue and on
// a real Redis queue and the embedded store (queue.ChatBusy).
func TestQuietCheckInSkippedWhileChatBusy(t *testing.T) {
	for name, newQ := range map[string]func(t *testing.T) queue.Queue{
		"memory": func(*testing.T) queue.Queue { return queue.NewMemory(queue.Options{}) },
		"embedded": func(t *testing.T) queue.Queue {
			es, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), queue.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { es.Close() })
			return es
		},
		"redis": func(t *testing.T) queue.Queue {
			q, err := queue.NewRedis(context.Background(), queuetest.StartRedis(t), queue.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := newQ(t)
			st := NewFile("")
			now := t0
			sv := &Service{Store: st, Now: func() time.Time { return now }}
			quiet, err := sv.Create(ctx, Owner{ChatID: 5}, Schedule{Spec: "every 1h", Text: "anything new?", Quiet: true})
			if err != nil {
				t.Fatal(err)
			}
			loud, err := sv.Create(ctx, Owner{ChatID: 5}, Schedule{Spec: "every 1h", Text: "report"})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = q.Enqueue(ctx, queue.Job{ChatID: 5, Goal: "a long task"})
			if err != nil {
				t.Fatal(err)
			}
			r := &Runner{Store: st, Queue: q, Now: func() time.Time { return now }}
			now = now.Add(time.Hour)
			if n, err := r.Tick(ctx); n != 1 || err != nil {
				t.Fatalf("tick while busy: %d %v (want only the loud schedule)", n, err)
			}
			if got, _ := st.Get(ctx, quiet.ID); got.LastStatus != StatusBusy || got.Fires != 0 {
				t.Fatalf("quiet while busy: %+v", got)
			}
			if got, _ := st.Get(ctx, loud.ID); got.Fires != 1 {
				t.Fatalf("loud while busy: %+v", got)
			}
			if r.Stats().Busy.Load() != 1 {
				t.Fatalf("busy counter %d", r.Stats().Busy.Load())
			}
			// The chat's jobs finish.
			for done := 0; done < 2; {
				ls, err := q.Claim(ctx, "w", 1, 100*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range ls {
					if err := q.Ack(ctx, l, queue.Result{}); err != nil {
						t.Fatal(err)
					}
					done++
				}
			}
			now = now.Add(time.Hour)
			if n, err := r.Tick(ctx); n != 2 || err != nil {
				t.Fatalf("tick when idle: %d %v", n, err)
			}
			if got, _ := st.Get(ctx, quiet.ID); got.Fires != 1 || got.LastStatus != StatusEnqueued {
				t.Fatalf("quiet when idle: %+v", got)
			}
		})
	}
}
