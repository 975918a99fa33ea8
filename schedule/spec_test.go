package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseSpec(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		text, tz string
		kind     SpecKind
		canon    string
		next     string // first fire after now (RFC 3339), "" for none checked
	}{
		{"every 15m", "", KindEvery, "every 15m", ""},
		{"every 1h30m", "", KindEvery, "every 1h30m", ""},
		{"EVERY 2d", "", KindEvery, "every 2d", ""},
		{"every 90s", "", KindEvery, "every 1m30s", ""},
		{"in 10m", "", KindAt, "at 2026-12-02T10:10:00Z", "2026-12-02T10:10:00Z"},
		{"at 2026-12-03T09:00:00+01:00", "", KindAt, "at 2026-12-03T08:00:00Z", "2026-12-03T08:00:00Z"},
		{"at 2026-12-03 09:00", "Europe/Berlin", KindAt, "at 2026-12-03T08:00:00Z", "2026-12-03T08:00:00Z"},
		{"at 2026-12-03T09:00", "America/New_York", KindAt, "at 2026-12-03T14:00:00Z", "2026-12-03T14:00:00Z"},
		{"0 9 * * 1-5", "Europe/Berlin", KindCron, "cron 0 9 * * 1-5", "2026-12-03T08:00:00Z"},
		{"cron   0  9 * *   MON-FRI", "", KindCron, "cron 0 9 * * MON-FRI", "2026-12-03T09:00:00Z"},
		{"@daily", "Asia/Tokyo", KindCron, "cron @daily", "2026-12-02T15:00:00Z"},
		{"@hourly", "UTC", KindCron, "cron @hourly", "2026-12-02T11:00:00Z"},
		{"*/5 * * * *", "", KindCron, "cron */5 * * * *", "2026-12-02T10:05:00Z"},
	} {
		sp, err := ParseSpec(tc.text, tc.tz, now)
		if err != nil {
			t.Errorf("%q: %v", tc.text, err)
			continue
		}
		if sp.Kind != tc.kind || sp.Text != tc.canon {
			t.Errorf("%q: kind %s text %q, want %s %q", tc.text, sp.Kind, sp.Text, tc.kind, tc.canon)
		}
		if tc.next != "" {
			if got := sp.Next(now, now); !got.Equal(mustTime(t, tc.next)) {
				t.Errorf("%q in %q: next %s, want %s", tc.text, tc.tz, got, tc.next)
			}
		}
		// The canonical text parses to the same spec.
		again, err := ParseSpec(sp.Text, sp.TZ, now)
		if err != nil || again.Text != sp.Text || again.Kind != sp.Kind {
			t.Errorf("%q: canonical %q does not round-trip: %+v %v", tc.text, sp.Text, again, err)
		}
	}
}

func TestParseSpecErrorsNameTheField(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ text, tz, field, reason string }{
		{"", "", "spec", "empty"},
		{"61 * * * *", "", "cron minute", "above maximum"},
		{"* 24 * * *", "", "cron hour", "above maximum"},
		{"* * 32 * *", "", "cron day-of-month", "above maximum"},
		{"* * 0 * *", "", "cron day-of-month", "below minimum"},
		{"* * * 13 *", "", "cron month", "above maximum"},
		{"* * * * 8", "", "cron day-of-week", "above maximum"},
		{"* * * * FOO", "", "cron day-of-week", "failed to parse"},
		{"*/0 * * * *", "", "cron minute", "step"},
		{"* * * *", "", "spec", "4 fields"},
		{"0 * * * * *", "", "spec", "6 fields"},
		{"0 0 30 2 *", "", "spec", "never fires"},
		{"@every 1m", "", "spec", "unknown descriptor"},
		{"@reboot", "", "spec", "unknown descriptor"},
		{"CRON_TZ=UTC 0 9 * * *", "", "spec", "'='"},
		{"TZ=x * * * *", "", "spec", "'='"},
		{"every", "", "every", "needs a duration"},
		{"every 0s", "", "every", "shorter than 1s"},
		{"every 500ms", "", "every", "shorter than 1s"},
		{"every -5m", "", "every", "shorter than 1s"},
		{"every 400d", "", "every", "whole days"},
		{"every 9000h", "", "every", "longer than"},
		{"every soon", "", "every", "not a duration"},
		{"every 1.0001s", "", "every", "precision"},
		{"at tomorrow", "", "at", "not a time"},
		{"at 1999-01-01T00:00:00Z", "", "at", "year"},
		{"0 9 * * *", "Mars/Olympus", "tz", "unknown"},
		{"0 9 * * *", "../../etc/passwd", "tz", "IANA"},
		{"0 9 * * *", "/etc/localtime", "tz", "IANA"},
		{"0 9 * * *", "Local", "tz", "IANA"},
		{"0 9 * * *", "Europe/Berlin\x00", "tz", "holds"},
		{"0 9 * * *", strings.Repeat("A", 65), "tz", "limit of 64"},
		{strings.Repeat("1", 129), "", "spec", "limit of 128"},
		{"0 9 * * *\n", "", "spec", "control"},
		{"every 1m\xff", "", "spec", "UTF-8"},
	} {
		_, err := ParseSpec(tc.text, tc.tz, now)
		var se *SpecError
		if !errors.As(err, &se) || !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%q tz %q: error %v, want a *SpecError", tc.text, tc.tz, err)
			continue
		}
		if se.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%q tz %q: %v (field %q), want field %q and %q", tc.text, tc.tz, err, se.Field, tc.field, tc.reason)
		}
	}
}

// fires lists the first n fire times after from, in UTC RFC 3339.
func fires(t *testing.T, spec, tz, from string, n int) []string {
	t.Helper()
	start := mustTime(t, from)
	sp, err := ParseSpec(spec, tz, start)
	if err != nil {
		t.Fatalf("%q: %v", spec, err)
	}
	var out []string
	at := start
	for i := 0; i < n; i++ {
		at = sp.Next(at, start)
		out = append(out, at.UTC().Format(time.RFC3339))
	}
	return out
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// DST in America/New_York, 2026: 8 March 02:00 EST → 03:00 EDT, 1
// November 02:00 EDT → 01:00 EST.
func TestCronDST(t *testing.T) {
	// A time in the spring-forward gap does not exist that day.
	eq(t, "02:30 daily over the gap", fires(t, "30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 3),
		[]string{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"})
	// 03:00 exists both days; the offset changes under it.
	eq(t, "03:00 daily over the gap", fires(t, "0 3 * * *", "America/New_York", "2026-03-07T00:00:00Z", 2),
		[]string{"2026-03-07T08:00:00Z", "2026-03-08T07:00:00Z"})
	// A fixed time repeated by the fall back fires once (robfig/cron alone
	// fires it at 05:30Z and again at 06:30Z on 1 November).
	eq(t, "01:30 daily over the repeat", fires(t, "30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z", 3),
		[]string{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"})
	// A wildcard hour fires in both passes of the repeated hour.
	eq(t, "hourly over the repeat", fires(t, "0 * * * *", "America/New_York", "2026-11-01T04:30:00Z", 3),
		[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"})
	eq(t, "every 30m over the repeat", fires(t, "every 30m", "America/New_York", "2026-11-01T05:00:00Z", 3),
		[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z"})
	// Europe/Berlin, 25 October 2026: 03:00 CEST → 02:00 CET.
	eq(t, "02:15 Berlin over the repeat", fires(t, "15 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2),
		[]string{"2026-10-25T00:15:00Z", "2026-10-26T01:15:00Z"})
	// Lord Howe shifts by 30 minutes (5 April 2026, 02:00 → 01:30).
	eq(t, "01:45 Lord Howe over the repeat", fires(t, "45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:00:00Z", 3),
		[]string{"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"})
}

func TestCronMonthEndsAndZones(t *testing.T) {
	eq(t, "the 31st", fires(t, "0 12 31 * *", "", "2027-01-31T13:00:00Z", 3),
		[]string{"2027-03-31T12:00:00Z", "2027-05-31T12:00:00Z", "2027-07-31T12:00:00Z"})
	eq(t, "29 February", fires(t, "0 0 29 2 *", "", "2027-03-01T00:00:00Z", 2),
		[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"})
	// Day-of-month OR day-of-week when both are restricted (cron(8)).
	eq(t, "1st or Mondays", fires(t, "0 8 1 * 1", "", "2026-11-28T00:00:00Z", 3),
		[]string{"2026-11-30T08:00:00Z", "2026-12-01T08:00:00Z", "2026-12-07T08:00:00Z"})
	eq(t, "the last hour of the year in Kiritimati (UTC+14)", fires(t, "0 23 31 12 *", "Pacific/Kiritimati", "2026-12-30T00:00:00Z", 1),
		[]string{"2026-12-31T09:00:00Z"})
	eq(t, "Kathmandu (UTC+5:45)", fires(t, "0 9 * * *", "Asia/Kathmandu", "2026-12-02T00:00:00Z", 1),
		[]string{"2026-12-02T03:15:00Z"})
	eq(t, "every 1h from a 10:07 anchor", fires(t, "every 1h", "", "2026-12-02T10:07:00Z", 2),
		[]string{"2026-12-02T11:07:00Z", "2026-12-02T12:07:00Z"})
}

func TestEveryNextIsAnchored(t *testing.T) {
	anchor := mustTime(t, "2026-12-02T10:00:00Z")
	sp, err := ParseSpec("every 15m", "", anchor)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ after, want string }{
		{"2026-12-02T09:00:00Z", "2026-12-02T10:15:00Z"},
		{"2026-12-02T10:00:00Z", "2026-12-02T10:15:00Z"},
		{"2026-12-02T10:14:59Z", "2026-12-02T10:15:00Z"},
		{"2026-12-02T10:15:00Z", "2026-12-02T10:30:00Z"},
		{"2026-12-09T13:31:00Z", "2026-12-09T13:45:00Z"},
	} {
		if got := sp.Next(mustTime(t, tc.after), anchor); !got.Equal(mustTime(t, tc.want)) {
			t.Errorf("after %s: %s, want %s", tc.after, got, tc.want)
		}
	}
}

func TestMinInterval(t *testing.T) {
	now := mustTime(t, "2026-12-02T10:00:00Z")
	for _, tc := range []struct {
		spec string
		want time.Duration
	}{
		{"* * * * *", time.Minute}, {"*/5 * * * *", 5 * time.Minute}, {"0 9 * * *", 24 * time.Hour},
		{"0,30 9 * * *", 30 * time.Minute}, {"every 45s", 45 * time.Second}, {"at 2027-01-01T00:00:00Z", 0},
	} {
		sp, err := ParseSpec(tc.spec, "", now)
		if err != nil {
			t.Fatal(err)
		}
		if got := sp.MinInterval(now); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.spec, got, tc.want)
		}
	}
}
