package schedule

import (
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseSpec: any text and zone either parse to a spec whose canonical
// text parses to the same kind and text again, with a Next that moves
// forward, or fail with a *SpecError; nothing panics or hangs.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"every 15m", "every 2d", "in 10m", "at 2026-12-03T09:00:00+01:00", "at 2026-12-03 09:00",
		"0 9 * * 1-5", "cron */5 * * * *", "@daily", "@every 1m", "0 0 30 2 *", "61 * * * *",
		"TZ=", "CRON_TZ=Europe/Berlin 0 9 * * *", "TZ=x", "*/4294967296 * * * *", "1-2-3 * * * *",
		"*/1/2 * * * *", "9223372036854775807 * * * *", "0 0 * * SUN-SAT", "? ? ? ? ?", "every 1.5h",
		"every 9999999999999999999h", "at 9999-12-31T23:59:59Z", "0 9 L * *", "0 9 * * 5#3",
	} {
		for _, tz := range []string{"", "Europe/Berlin", "America/New_York", "../x", "Local"} {
			f.Add(s, tz)
		}
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text, tz string) {
		sp, err := ParseSpec(text, tz, now)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q %q: error %v is not a *SpecError", text, tz, err)
			}
			if !utf8.ValidString(se.Error()) && utf8.ValidString(text) {
				t.Fatalf("error text is not UTF-8: %q", se.Error())
			}
			return
		}
		again, err := ParseSpec(sp.Text, sp.TZ, now)
		if err != nil || again.Text != sp.Text || again.Kind != sp.Kind {
			t.Fatalf("%q %q: canonical %q tz %q does not parse back: %v", text, tz, sp.Text, sp.TZ, err)
		}
		n := sp.Next(now, now)
		if sp.Kind != KindAt && !n.After(now) {
			t.Fatalf("%q %q: next %v not after %v", text, tz, n, now)
		}
		if !n.IsZero() {
			if m := sp.Next(n, now); !m.IsZero() && !m.After(n) {
				t.Fatalf("%q %q: next after %v is %v", text, tz, n, m)
			}
		}
	})
}
