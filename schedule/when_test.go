package schedule

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// SplitSpec reads the words people type, in the chat's zone, and hands
// back absolute one-shot times so the spec does not move later.
func TestSplitSpec(t *testing.T) {
	// 2026-12-02 10:00 UTC is 11:00 in Berlin, a Wednesday.
	now := t0
	for _, c := range []struct{ in, tz, spec, rest string }{
		{"in 20m stretch", "", "at 2026-12-02T10:20:00Z", "stretch"},
		{"IN 2h call the bank", "", "at 2026-12-02T12:00:00Z", "call the bank"},
		{"at 18:00 call mum", "Europe/Berlin", "at 2026-12-02T17:00:00Z", "call mum"},
		{"at 9:30 standup", "Europe/Berlin", "at 2026-12-03T08:30:00Z", "standup"}, // passed today: tomorrow
		{"10:30 tea", "", "at 2026-12-02T10:30:00Z", "tea"},
		{"tomorrow 9:00 renew the domain", "Europe/Berlin", "at 2026-12-03T08:00:00Z", "renew the domain"},
		{"tomorrow at 9 renew", "", "at 2026-12-03T09:00:00Z", "renew"},
		{"today 23:00 sleep", "", "at 2026-12-02T23:00:00Z", "sleep"},
		{"at 2026-12-24 18:00 presents", "Europe/Berlin", "at 2026-12-24T17:00:00Z", "presents"},
		{"at 2026-12-24T18:00:00+01:00 x", "", "at 2026-12-24T17:00:00Z", "x"},
		{"daily 9:00 news", "", "cron 0 9 * * *", "news"},
		{"weekdays at 8:15 summarise the open issues", "", "cron 15 8 * * 1-5", "summarise the open issues"},
		{"fri 17:30 weekly report", "", "cron 30 17 * * 5", "weekly report"},
		{"every 2h check", "", "every 2h", "check"},
		{"0 9 * * 1-5 standup notes", "", "cron 0 9 * * 1-5", "standup notes"},
		{"cron */15 * * * * ping", "", "cron */15 * * * *", "ping"},
		{"@daily digest", "", "@daily", "digest"},
	} {
		spec, rest, err := SplitSpec(c.in, c.tz, now)
		if err != nil || spec != c.spec || rest != c.rest {
			t.Errorf("SplitSpec(%q, %q) = %q, %q, %v; want %q, %q", c.in, c.tz, spec, rest, err, c.spec, c.rest)
			continue
		}
		if _, err := ParseSpec(spec, c.tz, now); err != nil {
			t.Errorf("%q: spec %q does not parse: %v", c.in, spec, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", "is empty"},
		{"in", "needs a duration"},
		{"in soon stretch", "not a duration"},
		{"at 25:00 x", "not a time of day"},
		{"today 9:00 x", "already past"},
		{"tomorrow x", "not a time of day"},
		{"sometime x", "not understood"},
		{"cron 1 2 3", "needs 5 fields"},
	} {
		_, _, err := SplitSpec(c.in, "", now)
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SplitSpec(%q): %v, want a *SpecError with %q", c.in, err, c.want)
		}
	}
	if _, _, err := SplitSpec("in 1h x", "Not/AZone", now); err == nil {
		t.Error("an unknown zone was accepted")
	}
}

// FuzzSplitSpec: any argument either splits into a spec that ParseSpec
// accepts (with the rest a suffix of the input's words) or fails with a
// *SpecError; nothing panics.
func FuzzSplitSpec(f *testing.F) {
	for _, s := range []string{"in 20m stretch", "at 18:00 x", "tomorrow at 9 y", "weekdays 8:00 z", "at 2026-12-24 18:00 p",
		"0 9 * * 1-5 q", "cron */5 * * * * r", "@hourly s", "every 90s t", "10:30", "at 99:99", "tomorrow", "mon", "at -1:00 x",
		"in 1d", "at 2026-02-30 10:00 x", "sunday at 23:59 z", "+1:00 x", "today 0 x"} {
		f.Add(s, "Europe/Berlin")
		f.Add(s, "")
	}
	now := t0
	f.Fuzz(func(t *testing.T, arg, tz string) {
		spec, rest, err := SplitSpec(arg, tz, now)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a *SpecError", arg, err)
			}
			return
		}
		if _, err := ParseSpec(spec, tz, now); err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: spec %q: %v", arg, spec, err)
			}
		}
		if utf8.ValidString(arg) && rest != "" && !strings.HasSuffix(strings.Join(strings.Fields(arg), " "), rest) {
			t.Fatalf("%q: rest %q is not the end of the input", arg, rest)
		}
	})
}
