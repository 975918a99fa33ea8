package schedule

import (
	"context"
	"testing"
	"time"
)

func TestStoreCounts(t *testing.T) {
	stores(t, func(t *testing.T, ns func() Store) {
		ctx := context.Background()
		a, b := mk(t, 1, "every 1m", t0), mk(t, 2, "every 1m", t0)
		for _, s := range []Schedule{a, b} {
			if err := ns().Create(ctx, s, 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ns().SetEnabled(ctx, b.ID, false, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := ns().Claim(ctx, Claim{ID: a.ID, Expected: a.Next, Next: a.Next.Add(time.Minute), Job: BuildJob(a, a.Next), At: a.Next, Owner: "o", Lease: time.Minute, Now: a.Next}); err != nil {
			t.Fatal(err)
		}
		c, err := ns().(Counter).Counts(ctx)
		if err != nil || c != (Counts{Schedules: 2, Enabled: 1, Pending: 1}) {
			t.Fatalf("counts %+v %v", c, err)
		}
	})
}
