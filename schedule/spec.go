package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
)

// SpecKind says how a schedule's fire times are computed.
type SpecKind string

// Spec kinds.
const (
	// KindCron: a 5-field cron expression (minute hour day-of-month month
	// day-of-week) or a descriptor (@hourly, @daily, ...) in a time zone.
	KindCron SpecKind = "cron"
	// KindEvery: a fixed interval from an anchor time (the creation time).
	KindEvery SpecKind = "every"
	// KindAt: one fire at one instant.
	KindAt SpecKind = "at"
)

// Limits on spec input (it comes from chat users: untrusted).
const (
	// MaxSpecBytes is the longest spec text accepted.
	MaxSpecBytes = 128
	// MaxTZBytes is the longest time zone name accepted.
	MaxTZBytes = 64
	// MaxEvery is the longest `every` interval accepted.
	MaxEvery = 366 * 24 * time.Hour
	// DefaultMinInterval is the shortest interval between two fires of a
	// schedule when Limits.MinInterval is zero.
	DefaultMinInterval = time.Minute
	// minIntervalProbe is how many successive cron fires are looked at to
	// find a cron expression's shortest interval.
	minIntervalProbe = 512
)

// ErrInvalidSpec is matched (errors.Is) by every *SpecError.
var ErrInvalidSpec = errors.New("schedule: invalid spec")

// SpecError names the part of a spec that is wrong: "spec", "tz",
// "every", "at", or a cron field ("cron minute", "cron hour",
// "cron day-of-month", "cron month", "cron day-of-week").
type SpecError struct {
	Field  string
	Value  string
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("schedule: spec %s %q: %s", e.Field, clip(e.Value, 40), e.Reason)
}

// Is makes errors.Is(err, ErrInvalidSpec) true.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

func specErr(field, value, format string, args ...any) error {
	return &SpecError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Spec is a parsed schedule spec. Build one with ParseSpec; the zero value
// never fires. A Spec is immutable and safe for concurrent use.
type Spec struct {
	Kind SpecKind
	// Text is the canonical spec text ParseSpec accepts again: "every 15m",
	// "at 2026-12-03T09:00:00Z", "cron 0 9 * * 1-5".
	Text string
	// TZ is the IANA time zone of a cron spec (and of a local `at` time
	// when parsed); "" means UTC.
	TZ string
	// Every is the interval of an every spec.
	Every time.Duration
	// At is the instant of an at spec.
	At time.Time

	loc  *time.Location
	cron cron.Schedule
	// once: the minute and hour fields name fixed times (no '*'), so a
	// wall-clock time repeated by a fall-back fires once.
	once bool
}

// cronParser parses the five standard fields and the descriptors. A
// function, not a package-level variable: that one needed a (one-store)
// init function, which runs at the start of every odek process.
func cronParser() cron.Parser {
	return cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
}

// isDescriptor reports the cron descriptors accepted (robfig/cron's
// @every is not: `every <dur>` is ours, with its own limits). A switch
// rather than a package-level map, which would be built at program start.
func isDescriptor(d string) bool {
	switch d {
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
		return true
	}
	return false
}

var cronFields = [5]string{"cron minute", "cron hour", "cron day-of-month", "cron month", "cron day-of-week"}

// ParseSpec parses untrusted spec text:
//
//	every <duration>          every 15m, every 1h30m, every 2d (d = 24h)
//	in <duration>             one shot, now + duration (stored as at)
//	at <time>                 one shot: RFC 3339 (2026-12-03T09:00:00+01:00),
//	                          or 2026-12-03T09:00[:SS] / "2026-12-03 09:00" in tz
//	cron <5 fields>           0 9 * * 1-5 (the word cron may be left out)
//	@daily, @hourly, ...      cron descriptors
//
// tz is an IANA zone name ("" = UTC) for cron specs and local at times.
// now resolves "in" and is the earliest time a cron spec must fire after
// (a spec that never fires, like "0 0 30 2 *", is refused). The error is a
// *SpecError naming the field.
func ParseSpec(text, tz string, now time.Time) (Spec, error) {
	if len(text) > MaxSpecBytes {
		return Spec{}, specErr("spec", text, "is %d bytes, over the limit of %d", len(text), MaxSpecBytes)
	}
	if !utf8.ValidString(text) {
		return Spec{}, specErr("spec", text, "is not valid UTF-8")
	}
	for _, r := range text {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return Spec{}, specErr("spec", text, "holds a control character")
		}
	}
	loc, err := LoadZone(tz)
	if err != nil {
		return Spec{}, err
	}
	text = strings.TrimSpace(text)
	word, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "":
		return Spec{}, specErr("spec", text, "is empty: want `every <duration>`, `at <time>`, `in <duration>` or a 5-field cron expression")
	case "every":
		d, err := parseDuration("every", rest)
		if err != nil {
			return Spec{}, err
		}
		return Spec{Kind: KindEvery, Text: "every " + formatDuration(d), TZ: tzName(tz), Every: d, loc: loc}, nil
	case "in":
		d, err := parseDuration("in", rest)
		if err != nil {
			return Spec{}, err
		}
		at := now.Add(d).Truncate(time.Second)
		return atSpec(at, tz, loc), nil
	case "at":
		at, err := parseAt(rest, loc)
		if err != nil {
			return Spec{}, err
		}
		return atSpec(at, tz, loc), nil
	case "cron":
		return parseCron(rest, tz, loc, now)
	default:
		return parseCron(text, tz, loc, now)
	}
}

func tzName(tz string) string {
	if tz == "UTC" {
		return ""
	}
	return tz
}

func atSpec(at time.Time, tz string, loc *time.Location) Spec {
	at = at.Truncate(time.Millisecond)
	return Spec{Kind: KindAt, Text: "at " + at.UTC().Format(time.RFC3339Nano), TZ: tzName(tz), At: at.UTC(), loc: loc}
}

// LoadZone loads an IANA time zone by name; "" and "UTC" mean UTC.
// Names are checked before the zone database is opened: at most
// MaxTZBytes of [A-Za-z0-9_+-/], no "..", not absolute, not "Local".
func LoadZone(tz string) (*time.Location, error) {
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	if len(tz) > MaxTZBytes {
		return nil, specErr("tz", tz, "is %d bytes, over the limit of %d", len(tz), MaxTZBytes)
	}
	for i := 0; i < len(tz); i++ {
		c := tz[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-' || c == '/') {
			return nil, specErr("tz", tz, "holds %q: want an IANA zone name such as Europe/Berlin", c)
		}
	}
	if strings.Contains(tz, "..") || strings.HasPrefix(tz, "/") || tz == "Local" {
		return nil, specErr("tz", tz, "is not an IANA zone name such as Europe/Berlin")
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, specErr("tz", tz, "unknown time zone")
	}
	return loc, nil
}

// parseDuration accepts a Go duration (90s, 1h30m) or whole days (2d),
// from 1 s to MaxEvery.
func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, specErr(field, s, "needs a duration such as 15m, 1h30m or 2d")
	}
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && !strings.ContainsAny(n, "hmsuµn") {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 || days > int(MaxEvery/(24*time.Hour)) {
			return 0, specErr(field, s, "want whole days from 1 to %d", int(MaxEvery/(24*time.Hour)))
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, specErr(field, s, "not a duration: want e.g. 15m, 1h30m or 2d")
		}
	}
	if d < time.Second {
		return 0, specErr(field, s, "is shorter than 1s")
	}
	if d > MaxEvery {
		return 0, specErr(field, s, "is longer than %s", formatDuration(MaxEvery))
	}
	if d%time.Millisecond != 0 {
		return 0, specErr(field, s, "has a precision finer than 1ms")
	}
	return d, nil
}

// formatDuration writes d the way parseDuration reads it back.
func formatDuration(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	// 1h0m0s → 1h, 1h30m0s → 1h30m.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var localLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

func parseAt(s string, loc *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, specErr("at", s, "needs a time: RFC 3339 (2026-12-03T09:00:00+01:00) or 2026-12-03 09:00 in the time zone")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if t.Year() < 2000 || t.Year() > 9999 {
			return time.Time{}, specErr("at", s, "year must be 2000..9999")
		}
		return t, nil
	}
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			if t.Year() < 2000 {
				return time.Time{}, specErr("at", s, "year must be 2000..9999")
			}
			return t, nil
		}
	}
	return time.Time{}, specErr("at", s, "not a time: want RFC 3339 (2026-12-03T09:00:00+01:00) or 2026-12-03 09:00 in the time zone")
}

func parseCron(expr, tz string, loc *time.Location, now time.Time) (Spec, error) {
	expr = strings.Join(strings.Fields(expr), " ")
	if strings.Contains(expr, "=") {
		return Spec{}, specErr("spec", expr, "holds '=': a time zone goes in tz, not in the expression")
	}
	if expr == "" {
		return Spec{}, specErr("spec", expr, "cron needs 5 fields: minute hour day-of-month month day-of-week")
	}
	once := true
	if strings.HasPrefix(expr, "@") {
		once = strings.ToLower(expr) != "@hourly"
		if !isDescriptor(strings.ToLower(expr)) {
			return Spec{}, specErr("spec", expr, "unknown descriptor: want @hourly, @daily, @weekly, @monthly or @yearly (or `every <duration>`)")
		}
		expr = strings.ToLower(expr)
	} else {
		f := strings.Fields(expr)
		if len(f) != 5 {
			return Spec{}, specErr("spec", expr, "cron has %d fields, want 5: minute hour day-of-month month day-of-week (no seconds; the time zone goes in tz)", len(f))
		}
		once = !strings.Contains(f[0]+f[1], "*")
		// Check each field alone so the error names it.
		for i, v := range f {
			probe := [5]string{"*", "*", "*", "*", "*"}
			probe[i] = v
			if _, err := cronParser().Parse(strings.Join(probe[:], " ")); err != nil {
				return Spec{}, specErr(cronFields[i], v, "%s", err)
			}
		}
	}
	s, err := cronParser().Parse(expr)
	if err != nil {
		return Spec{}, specErr("spec", expr, "%s", err)
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return Spec{}, specErr("spec", expr, "unsupported cron form")
	}
	ss.Location = loc
	sp := Spec{Kind: KindCron, Text: "cron " + expr, TZ: tzName(tz), loc: loc, cron: ss, once: once}
	if sp.Next(now, time.Time{}).IsZero() {
		return Spec{}, specErr("spec", expr, "never fires (no matching date within 5 years)")
	}
	return sp, nil
}

// Location is the spec's time zone (UTC when none).
func (s Spec) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// Next returns the first fire time strictly after after, or the zero time
// when there is none (a past one-shot, the zero Spec). anchor is the start
// of an every spec's intervals (fires are anchor + k×Every, k ≥ 1); other
// kinds ignore it.
//
// Cron in a time zone with daylight saving: a wall-clock time that does
// not exist on a day (in the spring-forward gap) does not fire that day;
// a wall-clock time that occurs twice (fall back) fires once, at its first
// occurrence, when the minute and hour fields are fixed ("30 1 * * *"),
// and at both when either has a '*' ("0 * * * *", like cron(8)'s
// wildcard jobs). Tested in TestCronDST.
func (s Spec) Next(after, anchor time.Time) time.Time {
	switch s.Kind {
	case KindAt:
		if s.At.After(after) {
			return s.At
		}
		return time.Time{}
	case KindEvery:
		if s.Every <= 0 {
			return time.Time{}
		}
		if after.Before(anchor) {
			return anchor.Add(s.Every)
		}
		k := after.Sub(anchor)/s.Every + 1
		return anchor.Add(k * s.Every)
	case KindCron:
		if s.cron == nil {
			return time.Time{}
		}
		n := s.cron.Next(after.In(s.Location()))
		if !n.IsZero() && s.once && isRepeat(n) {
			n = s.cron.Next(n)
		}
		if n.IsZero() {
			return n
		}
		return n.UTC()
	}
	return time.Time{}
}

// isRepeat reports whether t's wall-clock time already occurred earlier
// with another UTC offset (the second pass through a fall-back hour).
func isRepeat(t time.Time) bool {
	_, off := t.Zone()
	_, offBefore := t.Add(-3 * time.Hour).Zone()
	diff := offBefore - off
	if diff <= 0 {
		return false
	}
	e := t.Add(-time.Duration(diff) * time.Second)
	_, eoff := e.Zone()
	return eoff != off && sameWall(e, t)
}

func sameWall(a, b time.Time) bool {
	y1, m1, d1 := a.Date()
	y2, m2, d2 := b.Date()
	return y1 == y2 && m1 == m2 && d1 == d2 && a.Hour() == b.Hour() && a.Minute() == b.Minute() && a.Second() == b.Second()
}

// MinInterval is the shortest time between two fires: Every for every
// specs, the least gap among the next fires after now for cron (at most
// one day is assumed when they are sparse), 0 for at.
func (s Spec) MinInterval(now time.Time) time.Duration {
	switch s.Kind {
	case KindEvery:
		return s.Every
	case KindCron:
		prev := s.Next(now, time.Time{})
		least := time.Duration(1<<63 - 1)
		for i := 0; i < minIntervalProbe && !prev.IsZero(); i++ {
			n := s.Next(prev, time.Time{})
			if n.IsZero() {
				break
			}
			if g := n.Sub(prev); g < least {
				least = g
			}
			if least <= time.Minute {
				break
			}
			prev = n
		}
		return least
	}
	return 0
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
