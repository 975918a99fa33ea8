package schedule

import (
	"fmt"
	"strconv"
	"time"
)

// LimitsFromEnv reads the chats' schedule limits from the environment
// (getenv is os.Getenv): ODEK_SCHEDULE_MIN_INTERVAL (shortest interval, a
// Go duration of at least 1s; default 1m), ODEK_SCHEDULE_MAX_PER_CHAT
// (50), ODEK_SCHEDULE_MAX_PER_USER (20) and ODEK_SCHEDULE_MAX_DAILY_FIRES
// (200 fires of one chat's schedules in the next 24 hours). The error
// names the variable.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	var lim Limits
	if v := getenv("ODEK_SCHEDULE_MIN_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return lim, fmt.Errorf("ODEK_SCHEDULE_MIN_INTERVAL: want a duration of at least 1s, got %q", clip(v, 40))
		}
		lim.MinInterval = d
	}
	for _, f := range []struct {
		name string
		to   *int
	}{{"ODEK_SCHEDULE_MAX_PER_CHAT", &lim.MaxPerChat}, {"ODEK_SCHEDULE_MAX_PER_USER", &lim.MaxPerUser}, {"ODEK_SCHEDULE_MAX_DAILY_FIRES", &lim.MaxDailyFires}} {
		if v := getenv(f.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1_000_000 {
				return lim, fmt.Errorf("%s: want a whole number from 1 to 1000000, got %q", f.name, clip(v, 40))
			}
			*f.to = n
		}
	}
	return lim, nil
}
