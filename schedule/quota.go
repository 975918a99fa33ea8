package schedule

import (
	"context"
	"fmt"
	"time"
)

// firesWithin counts sp's fires in (now, now+d], at most limit+1.
func firesWithin(sp Spec, anchor, now time.Time, d time.Duration, limit int) int {
	n := 0
	end := now.Add(d)
	for t := sp.Next(now, anchor); !t.IsZero() && !t.After(end) && n <= limit; t = sp.Next(t, anchor) {
		n++
	}
	return n
}

// checkQuota enforces the per-user count and the chat's daily fires for
// a new schedule s (the per-chat count is the Store's, atomic with the
// create). The checks read before the create, so two creates racing may
// both pass: the limits are a guard against runaway use, not a bill.
func (sv *Service) checkQuota(ctx context.Context, s Schedule, sp Spec, now time.Time) error {
	lim := sv.Limits.withDefaults()
	chat, err := sv.Store.List(ctx, s.ChatID)
	if err != nil {
		return err
	}
	daily := firesWithin(sp, s.Anchor, now, 24*time.Hour, lim.MaxDailyFires)
	for _, o := range chat {
		if !o.Enabled {
			continue
		}
		osp, err := o.ParsedSpec()
		if err != nil {
			continue
		}
		daily += firesWithin(osp, o.Anchor, now, 24*time.Hour, lim.MaxDailyFires)
		if daily > lim.MaxDailyFires {
			break
		}
	}
	if daily > lim.MaxDailyFires {
		return fmt.Errorf("%w: with this schedule the chat's schedules would fire %d times in the next 24 hours, over the limit of %d (use a longer interval)", ErrLimit, daily, lim.MaxDailyFires)
	}
	if s.UserID != 0 {
		all, err := sv.Store.List(ctx, 0)
		if err != nil {
			return err
		}
		mine := 0
		for _, o := range all {
			if o.UserID == s.UserID {
				mine++
			}
		}
		if mine >= lim.MaxPerUser {
			return fmt.Errorf("%w: you have %d schedules, the most allowed per user (delete one first)", ErrLimit, mine)
		}
	}
	return nil
}

// Zone returns o's chat's time zone ("" = UTC).
func (sv *Service) Zone(ctx context.Context, o Owner) (string, error) {
	return sv.Store.Zone(ctx, o.ChatID)
}

// SetZone sets o's chat's time zone (an IANA name such as Europe/Berlin;
// "" or UTC clears it) and returns its canonical name.
func (sv *Service) SetZone(ctx context.Context, o Owner, tz string) (string, error) {
	if o.ChatID == 0 {
		return "", fmt.Errorf("%w: no chat", ErrForbidden)
	}
	if len(tz) > 64 {
		return "", invalid("tz", "%q: at most 64 bytes", clip(tz, 70))
	}
	loc, err := LoadZone(tz)
	if err != nil {
		return "", err
	}
	name := tzName(loc.String())
	return name, sv.Store.SetZone(ctx, o.ChatID, name)
}
