package chatcore

import "time"

// Books is the decision state of one chat: today's usage and the earlier
// days, what each unfinished job reserves of the day, and how full the
// conversation is. The shell keeps one per chat (in the chat's actor, so
// no lock) and saves it with the chat's state; Books does no I/O.
//
// The transitions a chat goes through:
//
//	Request  a message in        → start (cap, reserve), hold, or refuse
//	Started  its job enqueued    → the reservation is held
//	Settled  the job's result    → usage counted, reservation released
//	Ended    a job forgotten     → reservation released, nothing counted
//	Next     after any of these  → the oldest held request that may start
type Books struct {
	Use      Usage
	Hist     []DayTotal       // earlier days, oldest first (at most KeepDays back)
	Reserved map[string]int64 // tokens each unfinished job holds, by job id
	Gauge    Gauge
}

// Roll moves the usage of a past day into Hist when the UTC day changed.
func (b *Books) Roll(now time.Time) {
	if b.Use.Day != "" && b.Use.Day != UTCDay(now) && (b.Use.Tokens > 0 || b.Use.Jobs > 0) {
		b.Hist = AppendHistory(b.Hist, b.Use.Total(), now)
	}
	b.Use = b.Use.Rollover(now)
}

// reserved is what the unfinished jobs hold.
func (b *Books) reserved() int64 {
	var n int64
	for _, r := range b.Reserved {
		n += r
	}
	return n
}

// Request decides a new request when waiting requests are already held
// behind the chat's jobs: a refusal when the day is spent, else a hold
// when others wait (the order of the chat's messages is kept) or when
// the unfinished jobs reserve the rest of the day, else a start with the
// cap Admit gives.
func (b *Books) Request(p Policy, waiting int, lang string, now time.Time) Admission {
	b.Roll(now)
	a := Admit(p, b.Use.Tokens, b.reserved(), lang, now)
	if a.Verdict == BudgetOK && waiting > 0 {
		return Admission{Verdict: BudgetHeld}
	}
	return a
}

// Next decides whether the oldest held request may start now (as a
// request with no one before it).
func (b *Books) Next(p Policy, lang string, now time.Time) Admission {
	return b.Request(p, 0, lang, now)
}

// Beside is what the other conversations of the same chat (a forum's
// topics, issue 26) spent today and reserve: the chat's daily budget is
// the chat's, however many conversations share it.
type Beside struct{ Used, Reserved int64 }

// RequestBeside is Request with the chat's other conversations counted
// against the day too.
func (b *Books) RequestBeside(p Policy, waiting int, lang string, now time.Time, o Beside) Admission {
	b.Roll(now)
	a := Admit(p, b.Use.Tokens+o.Used, b.reserved()+o.Reserved, lang, now)
	if a.Verdict == BudgetOK && waiting > 0 {
		return Admission{Verdict: BudgetHeld}
	}
	return a
}

// Reserve is what the unfinished jobs hold of the day.
func (b *Books) Reserve() int64 { return b.reserved() }

// Started records that job started with admission a.
func (b *Books) Started(job string, a Admission) {
	if a.Reserve <= 0 {
		return
	}
	if b.Reserved == nil {
		b.Reserved = map[string]int64{}
	}
	b.Reserved[job] = a.Reserve
}

// Settled records job's result as plan p settled it (PlanResult): the
// day's usage after it, and the reservation released.
func (b *Books) Settled(job string, p Plan) {
	b.Use = p.Use
	delete(b.Reserved, job)
}

// Ended releases job's reservation with nothing counted (a job forgotten:
// lost with an in-memory queue, or unknown to the queue).
func (b *Books) Ended(job string) { delete(b.Reserved, job) }

// Spend counts tokens spent outside a job (the digest call of /compact).
func (b *Books) Spend(tokens int64, now time.Time) {
	b.Roll(now)
	b.Use.Tokens += tokens
}

// Prune rolls the books to now (a past day's usage goes into the
// history) and drops history older than KeepDays.
func (b *Books) Prune(now time.Time) {
	b.Roll(now)
	b.Hist = AppendHistory(b.Hist, DayTotal{}, now)
}

// Empty reports whether the books hold nothing worth keeping at now: no
// history, no reservation and no usage today. A past day's usage not yet
// rolled into the history (Prune rolls it) is worth keeping.
func (b *Books) Empty(now time.Time) bool {
	today := UTCDay(now)
	return len(b.Hist) == 0 && len(b.Reserved) == 0 && (b.Use == Usage{} || b.Use == Usage{Day: today})
}
