package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SplitSpec reads the spec at the start of a chat command's argument
// (`/schedule add <spec> <goal>`, `/remind <when> <text>`) and returns it
// as ParseSpec text, with the rest of the argument (the goal or reminder).
// Besides ParseSpec's forms it reads the words people type:
//
//	in 20m | in 2h | in 1d          one shot after a duration
//	at 18:00 | 18:00                one shot, today (tomorrow when passed) in tz
//	tomorrow 9:00 | tomorrow at 9   one shot, tomorrow in tz
//	at 2026-12-24 18:00             one shot on a date in tz
//	daily 09:00 | weekdays 8:00     cron 0 9 * * * | cron 0 8 * * 1-5
//	mon 9:00 | fri 17:30            cron on one weekday
//	every 1h                        interval
//	0 9 * * 1-5 | cron …| @daily    cron
//
// Clock times are HH:MM or H (24-hour). now and tz resolve the relative
// forms; the spec returned is absolute ("at <RFC 3339>") for them, so it
// does not move when parsed again later. The error names what is wrong.
func SplitSpec(arg, tz string, now time.Time) (spec, rest string, err error) {
	loc, err := LoadZone(tz)
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(arg)
	if len(f) == 0 {
		return "", "", specErr("when", arg, "is empty: say when, e.g. `in 20m`, `at 18:00`, `tomorrow 9:00`, `every 1h` or `weekdays 8:00`")
	}
	after := func(n int) string { return strings.TrimSpace(strings.Join(f[min(n, len(f)):], " ")) }
	w := strings.ToLower(f[0])
	local := now.In(loc)
	switch {
	case w == "in" || w == "every":
		if len(f) < 2 {
			return "", "", specErr(w, arg, "needs a duration such as 20m, 1h30m or 2d")
		}
		if _, err := parseDuration(w, strings.ToLower(f[1])); err != nil {
			return "", "", err
		}
		if w == "in" {
			d, _ := parseDuration(w, strings.ToLower(f[1]))
			return atText(now.Add(d).Truncate(time.Second)), after(2), nil
		}
		return "every " + strings.ToLower(f[1]), after(2), nil
	case w == "cron":
		if len(f) < 6 {
			return "", "", specErr("cron", arg, "needs 5 fields: minute hour day-of-month month day-of-week")
		}
		return "cron " + strings.Join(f[1:6], " "), after(6), nil
	case strings.HasPrefix(w, "@"):
		return w, after(1), nil
	case w == "tomorrow" || w == "today":
		i := 1
		if i < len(f) && strings.EqualFold(f[i], "at") {
			i++
		}
		if i >= len(f) {
			return "", "", specErr(w, arg, "needs a time, e.g. %s 9:00", w)
		}
		h, m, ok := clockOf(f[i])
		if !ok {
			return "", "", specErr(w, f[i], "not a time of day: want HH:MM or H (24-hour)")
		}
		day := local
		if w == "tomorrow" {
			day = local.AddDate(0, 0, 1)
		}
		t := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc)
		if !t.After(now) {
			return "", "", specErr(w, arg, "%s is already past (%s)", t.Format("15:04"), local.Format("15:04 MST"))
		}
		return atText(t), after(i + 1), nil
	case w == "at":
		if len(f) < 2 {
			return "", "", specErr("at", arg, "needs a time: at 18:00, or at 2026-12-24 18:00")
		}
		if len(f) >= 3 && isDate(f[1]) {
			if _, err := parseAt(f[1]+" "+f[2], loc); err != nil {
				return "", "", err
			}
			t, _ := parseAt(f[1]+" "+f[2], loc)
			return atText(t), after(3), nil
		}
		if t, err := time.Parse(time.RFC3339, f[1]); err == nil {
			return atText(t), after(2), nil
		}
		t, err := nextClock(f[1], local, loc)
		if err != nil {
			return "", "", err
		}
		return atText(t), after(2), nil
	case w == "daily" || w == "weekdays" || weekday(w) != "":
		i := 1
		if i < len(f) && strings.EqualFold(f[i], "at") {
			i++
		}
		if i >= len(f) {
			return "", "", specErr(w, arg, "needs a time, e.g. %s 9:00", w)
		}
		h, m, ok := clockOf(f[i])
		if !ok {
			return "", "", specErr(w, f[i], "not a time of day: want HH:MM or H (24-hour)")
		}
		dow := "*"
		switch {
		case w == "weekdays":
			dow = "1-5"
		case w != "daily":
			dow = weekday(w)
		}
		return fmt.Sprintf("cron %d %d * * %s", m, h, dow), after(i + 1), nil
	}
	if _, _, ok := clockOf(f[0]); ok && strings.Contains(f[0], ":") {
		t, err := nextClock(f[0], local, loc)
		if err != nil {
			return "", "", err
		}
		return atText(t), after(1), nil
	}
	if len(f) >= 5 && cronish(f[0]) {
		return "cron " + strings.Join(f[:5], " "), after(5), nil
	}
	return "", "", specErr("when", clip(f[0], 40), "not understood: say `in 20m`, `at 18:00`, `tomorrow 9:00`, `daily 9:00`, `weekdays 8:00`, `every 1h` or a 5-field cron expression")
}

func atText(t time.Time) string { return "at " + t.UTC().Format(time.RFC3339) }

// clockOf reads HH:MM or H as a 24-hour time of day.
func clockOf(s string) (h, m int, ok bool) {
	hs, ms, colon := strings.Cut(s, ":")
	if hs == "" || len(hs) > 2 || colon && len(ms) != 2 {
		return 0, 0, false
	}
	h, err := strconv.Atoi(hs)
	if err != nil || h < 0 || h > 23 || hs[0] == '+' || hs[0] == '-' {
		return 0, 0, false
	}
	if colon {
		m, err = strconv.Atoi(ms)
		if err != nil || m < 0 || m > 59 || ms[0] == '+' || ms[0] == '-' {
			return 0, 0, false
		}
	}
	return h, m, true
}

// nextClock is the next time (after now) the clock shows s in loc.
func nextClock(s string, local time.Time, loc *time.Location) (time.Time, error) {
	h, m, ok := clockOf(s)
	if !ok {
		return time.Time{}, specErr("at", s, "not a time of day: want HH:MM or H (24-hour)")
	}
	t := time.Date(local.Year(), local.Month(), local.Day(), h, m, 0, 0, loc)
	if !t.After(local) {
		d := local.AddDate(0, 0, 1)
		t = time.Date(d.Year(), d.Month(), d.Day(), h, m, 0, 0, loc)
	}
	return t, nil
}

func isDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// weekday returns cron's day-of-week number for a day's name or its
// three-letter form, "" for anything else. A switch, not a package-level
// map: a map literal is built by code at program start, in every odek
// process (`odek run` links this package too).
func weekday(w string) string {
	switch w {
	case "sun", "sunday":
		return "0"
	case "mon", "monday":
		return "1"
	case "tue", "tuesday":
		return "2"
	case "wed", "wednesday":
		return "3"
	case "thu", "thursday":
		return "4"
	case "fri", "friday":
		return "5"
	case "sat", "saturday":
		return "6"
	}
	return ""
}

func cronish(s string) bool {
	return s != "" && strings.Trim(s, "0123456789*/,-?LW#") == ""
}
