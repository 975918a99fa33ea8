package bot

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// userRates is the per-user job rate: a token bucket per user
// (golang.org/x/time/rate) of perMinute jobs a minute with a burst of the
// same size, shared by all chats. perMinute <= 0 means no limit.
type userRates struct {
	mu        sync.Mutex
	perMinute int
	m         map[int64]*rate.Limiter
}

func newUserRates(perMinute int) *userRates {
	return &userRates{perMinute: perMinute, m: map[int64]*rate.Limiter{}}
}

// take takes one job from the user's bucket at now. It reports whether the
// job may start and, when not, how long until it may.
func (u *userRates) take(userID int64, now time.Time) (bool, time.Duration) {
	if u.perMinute <= 0 {
		return true, 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	l := u.m[userID]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(float64(u.perMinute)/60), u.perMinute)
		u.m[userID] = l
	}
	return takeAt(l, now)
}

// allows reports, without taking anything, whether the user's bucket
// holds a job at now and, when not, how long until it does: the check
// made before a user's file is fetched (the job it becomes takes the
// token).
func (u *userRates) allows(userID int64, now time.Time) (bool, time.Duration) {
	if u.perMinute <= 0 {
		return true, 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	l := u.m[userID]
	if l == nil {
		return true, 0
	}
	if tok := l.TokensAt(now); tok < 1 {
		return false, time.Duration((1 - tok) / float64(l.Limit()) * float64(time.Second))
	}
	return true, 0
}

// takeAt takes a token from l at now without waiting: whether it was
// taken, and if not how long until one is there.
func takeAt(l *rate.Limiter, now time.Time) (bool, time.Duration) {
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// prune forgets the users whose bucket is full again: a fresh bucket is
// the same.
func (u *userRates) prune(now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, l := range u.m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(u.m, id)
		}
	}
}

// len is how many users have a bucket (tests).
func (u *userRates) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m)
}
