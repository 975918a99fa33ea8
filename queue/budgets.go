package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Budgets keeps spending budgets where the queue is, so every process that
// reaches the queue (several odek-bot replicas, the workers that fire
// schedules) shares them (issue 26 point 5, issue 27): each account (a
// user, a chat, the guest pool) has its spend per UTC day and per UTC month
// and the reservations of its unfinished jobs.
//
// A job reserves before it is enqueued (ReserveBudget): the store checks
// every account the job is charged to against that account's caps, in one
// atomic step, and either refuses (a cap is spent), holds (what is left is
// reserved by unfinished jobs) or grants the job a share: the least that
// any account has left, which the job then holds and carries as its own
// cap, so it cannot overrun. When the job's result arrives its actual
// spend is counted once (SettleBudget) and the reservation released; a job
// that never starts releases it (ReleaseBudget). A reservation ends by
// itself at its lease, so a front end that dies leaks nothing.
//
// *Redis (Lua scripts, every key under the queue's hash tag), *Memory and
// the embedded store implement it; queuetest.RunBudgets is their
// conformance suite. Safe for concurrent use.
type Budgets interface {
	// ReserveBudget decides and, when granted, records r. Reserving an id
	// that holds a reservation already returns that grant again (a
	// redelivered request), and reserving one already settled is an
	// ErrBudgetSettled error.
	ReserveBudget(ctx context.Context, r Reservation) (Grant, error)
	// SettleBudget counts s against the accounts reservation id was
	// charged to (accounts when the store no longer knows it: its record
	// expired) and releases the reservation. Each id counts once: it
	// reports false when id was settled before.
	SettleBudget(ctx context.Context, id string, accounts []string, s Spend, now time.Time) (bool, error)
	// ReleaseBudget drops reservation id without counting anything. An
	// unknown or settled id is not an error.
	ReleaseBudget(ctx context.Context, id string) error
	// BudgetUsage is account's spend over the last HistoryDays days and
	// HistoryMonths months before now, and what its unfinished jobs hold.
	BudgetUsage(ctx context.Context, account string, now time.Time) (AccountUsage, error)
	// BudgetAccounts lists the accounts that spent or reserved, most
	// recently active first, at most max (<= 0: all).
	BudgetAccounts(ctx context.Context, max int) ([]string, error)
	// PutBudgetPolicy stores the operator's caps for every process
	// (odek-bot writes its own at start; a worker firing a schedule reads
	// them); BudgetPolicy reads them (ok false: none stored yet).
	PutBudgetPolicy(ctx context.Context, p BudgetPolicy) error
	BudgetPolicy(ctx context.Context) (BudgetPolicy, bool, error)
}

// BudgetBatch is a Budgets that reserves many at once (one round trip on
// Redis): the schedule runner's batches of fires use it when the store
// has it. Each element's outcome is the one ReserveBudget would give.
type BudgetBatch interface {
	ReserveBudgetAll(ctx context.Context, rs []Reservation) ([]Grant, []error)
}

// History kept and shown per account.
const (
	HistoryDays   = 35
	HistoryMonths = 12
)

// Retention of the records: day spend for dayKeep, month spend for
// monthKeep, a reservation's record (its accounts, whether it was settled)
// for recordKeep after its last change, long after its lease.
const (
	dayKeep    = 70 * 24 * time.Hour
	monthKeep  = 400 * 24 * time.Hour
	recordKeep = 8 * 24 * time.Hour
)

// Errors of the budget store. Match with errors.Is.
var (
	ErrBudgetInvalid = errors.New("queue: invalid budget request")
	ErrBudgetSettled = errors.New("queue: budget reservation already settled")
)

// Caps are one account's limits; a zero field is no cap.
type Caps struct {
	DayTokens   int64   `json:"day_tokens,omitempty"`
	MonthTokens int64   `json:"month_tokens,omitempty"`
	DayUSD      float64 `json:"day_usd,omitempty"`
	MonthUSD    float64 `json:"month_usd,omitempty"`
}

// IsZero reports whether no cap is set.
func (c Caps) IsZero() bool { return c == Caps{} }

// pick is o's cap over a: a when o leaves it unset (0), none when o
// removes it (negative), else o.
func pick[T int64 | float64](a, o T) T {
	switch {
	case o < 0:
		return 0
	case o > 0:
		return o
	}
	return a
}

// Over returns c with every field o sets (non-zero) taken from o; a
// negative field of o removes the cap.
func (c Caps) Over(o Caps) Caps {
	return Caps{DayTokens: pick(c.DayTokens, o.DayTokens), MonthTokens: pick(c.MonthTokens, o.MonthTokens),
		DayUSD: pick(c.DayUSD, o.DayUSD), MonthUSD: pick(c.MonthUSD, o.MonthUSD)}
}

// limit names, in the order the stores check them.
const (
	LimitDayTokens   = "day_tokens"
	LimitMonthTokens = "month_tokens"
	LimitDayUSD      = "day_usd"
	LimitMonthUSD    = "month_usd"
)

var limitNames = [4]string{LimitDayTokens, LimitMonthTokens, LimitDayUSD, LimitMonthUSD}

// vector is Caps in store units: tokens, tokens, micro-USD, micro-USD.
func (c Caps) vector() [4]int64 {
	return [4]int64{c.DayTokens, c.MonthTokens, microUSD(c.DayUSD), microUSD(c.MonthUSD)}
}

func microUSD(v float64) int64 {
	if v <= 0 || math.IsNaN(v) {
		return 0
	}
	if v > 1e12 {
		v = 1e12
	}
	return int64(math.Round(v * 1e6))
}

func fromMicro(v int64) float64 { return float64(v) / 1e6 }

// AccountCaps is one account a reservation is charged to.
type AccountCaps struct {
	Account string
	Caps    Caps
}

// Reservation asks for a job's share of its accounts' budgets.
type Reservation struct {
	// ID names the reservation: the job's id.
	ID string
	// Accounts are charged (1..MaxBudgetAccounts, distinct).
	Accounts []AccountCaps
	// MaxTokens and MaxUSD bound the share (the operator's per-job caps);
	// 0 is no bound. A share with no bound on any side is 0: the job
	// carries no cap of that kind.
	MaxTokens int64
	MaxUSD    float64
	// Lease is how long the reservation holds without being settled or
	// released (> 0): past it, it no longer counts.
	Lease time.Duration
	// Now is the caller's clock: the day and month charged.
	Now time.Time
}

// MaxBudgetAccounts bounds the accounts of one reservation.
const MaxBudgetAccounts = 4

// Verdict of a reservation.
type GrantVerdict string

// Grant verdicts.
const (
	GrantOK    GrantVerdict = "ok"
	GrantSpent GrantVerdict = "spent" // a cap is reached: refused until it resets
	GrantHeld  GrantVerdict = "held"  // what is left is reserved by unfinished jobs
)

// Grant is the store's answer to a reservation.
type Grant struct {
	Verdict GrantVerdict
	// Tokens and USD are the job's share, which it now holds (0: no cap
	// of that kind). Set with GrantOK.
	Tokens int64
	USD    float64
	// Account and Limit name the cap that refused or held the request,
	// Used and Max its figures (tokens, or USD for the USD limits).
	Account string
	Limit   string
	Used    float64
	Max     float64
	// ResetAt is when the refusing cap resets (the next UTC day or month).
	ResetAt time.Time
}

// Spend is what a job used.
type Spend struct {
	Tokens int64   `json:"tokens,omitempty"` // prompt + completion
	Prompt int64   `json:"prompt,omitempty"`
	Cached int64   `json:"cached,omitempty"` // prompt tokens served from the provider's cache
	USD    float64 `json:"usd,omitempty"`
	Jobs   int64   `json:"jobs,omitempty"`
}

// Add returns s plus o.
func (s Spend) Add(o Spend) Spend {
	return Spend{Tokens: s.Tokens + o.Tokens, Prompt: s.Prompt + o.Prompt, Cached: s.Cached + o.Cached, USD: s.USD + o.USD, Jobs: s.Jobs + o.Jobs}
}

// PeriodSpend is one day's ("2026-12-03") or month's ("2026-12") spend.
type PeriodSpend struct {
	Period string `json:"period"`
	Spend
}

// AccountUsage is one account's spend, newest period first (periods with
// no spend left out), and what its unfinished jobs hold now.
type AccountUsage struct {
	Account        string
	Days           []PeriodSpend
	Months         []PeriodSpend
	ReservedTokens int64
	ReservedUSD    float64
}

// Today and Month are the spend of now's UTC day and month.
func (u AccountUsage) Today(now time.Time) Spend { return periodOf(u.Days, Day(now)) }
func (u AccountUsage) Month(now time.Time) Spend { return periodOf(u.Months, Month(now)) }

func periodOf(ps []PeriodSpend, p string) Spend {
	for _, x := range ps {
		if x.Period == p {
			return x.Spend
		}
	}
	return Spend{}
}

// Day and Month are the budget periods of t: its UTC date and month.
func Day(t time.Time) string   { return t.UTC().Format("2006-01-02") }
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// ResetAt is when a limit's period after now begins: the next UTC midnight
// for the day limits, the first of the next UTC month for the month ones.
func ResetAt(limit string, now time.Time) time.Time {
	u := now.UTC()
	switch limit {
	case LimitMonthTokens, LimitMonthUSD:
		return time.Date(u.Year(), u.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
}

// BudgetPolicy is the operator's caps as every process applies them.
type BudgetPolicy struct {
	// ChatDayTokens is each chat's daily token budget (odek-bot's
	// ODEK_TELEGRAM_DAILY_TOKEN_BUDGET); 0 none.
	ChatDayTokens int64 `json:"chat_day_tokens,omitempty"`
	// User are every user's caps; Users override them per user id.
	User  Caps           `json:"user,omitzero"`
	Users map[int64]Caps `json:"users,omitempty"`
	// Guest, when set, is the shared pool of group members the allowlist
	// does not name (opt-in): they may use the bot in groups, all
	// charged to the one account GuestAccount.
	Guest *Caps `json:"guest,omitempty"`
	// AllowedUsers, AllowedChats and AllowAll are the bot's allowlist,
	// which tells a guest from a user.
	AllowedUsers []int64 `json:"allowed_users,omitempty"`
	AllowedChats []int64 `json:"allowed_chats,omitempty"`
	AllowAll     bool    `json:"allow_all,omitempty"`
	// JobMaxTokens and JobMaxUSD are the per-job caps (0 none): what one
	// job may spend and so reserve. Without them a job reserves all that
	// is left, and the owner's next job waits for it.
	JobMaxTokens int64   `json:"job_max_tokens,omitempty"`
	JobMaxUSD    float64 `json:"job_max_usd,omitempty"`
}

// Account names.
const GuestAccount = "guest"

// UserAccount and ChatAccount name a user's and a chat's accounts.
func UserAccount(id int64) string { return "user:" + strconv.FormatInt(id, 10) }
func ChatAccount(id int64) string { return "chat:" + strconv.FormatInt(id, 10) }

// Guest reports whether userID in chatID is a guest: the guest pool is
// on, the chat is a group, and neither the user nor the chat is on the
// allowlist.
func (p BudgetPolicy) IsGuest(chatID, userID int64) bool {
	return p.Guest != nil && chatID < 0 && !p.AllowAll && !slices.Contains(p.AllowedUsers, userID) && !slices.Contains(p.AllowedChats, chatID)
}

// UserCaps are userID's caps: the defaults with its override.
func (p BudgetPolicy) UserCaps(userID int64) Caps {
	c := p.User
	if o, ok := p.Users[userID]; ok {
		c = c.Over(o)
	}
	return c
}

// Charged are the accounts a job of userID in chatID is charged to: the
// chat's (when it has a daily budget), and the user's or, for a guest,
// the guest pool. Accounts without caps are charged too (their spend is
// what /usage shows). A zero userID (a channel post) is charged to the
// chat alone.
func (p BudgetPolicy) Charged(chatID, userID int64) []AccountCaps {
	out := []AccountCaps{{Account: ChatAccount(chatID), Caps: Caps{DayTokens: p.ChatDayTokens}}}
	switch {
	case userID == 0:
	case p.IsGuest(chatID, userID):
		out = append(out, AccountCaps{Account: GuestAccount, Caps: *p.Guest})
	default:
		out = append(out, AccountCaps{Account: UserAccount(userID), Caps: p.UserCaps(userID)})
	}
	return out
}

// Names are the account names of acs.
func Names(acs []AccountCaps) []string {
	out := make([]string, len(acs))
	for i, a := range acs {
		out[i] = a.Account
	}
	return out
}

// validAccount: 1..64 bytes of [a-z0-9:_-].
func validAccount(a string) bool {
	if a == "" || len(a) > 64 {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validateAccounts(names []string) error {
	if len(names) == 0 || len(names) > MaxBudgetAccounts {
		return fmt.Errorf("%w: %d accounts: want 1..%d", ErrBudgetInvalid, len(names), MaxBudgetAccounts)
	}
	for i, a := range names {
		if !validAccount(a) {
			return fmt.Errorf("%w: account %q: want 1..64 bytes of [a-z0-9:_-]", ErrBudgetInvalid, clip(a, 70))
		}
		if slices.Contains(names[:i], a) {
			return fmt.Errorf("%w: account %q named twice", ErrBudgetInvalid, a)
		}
	}
	return nil
}

func (r Reservation) validate() error {
	if !validID(r.ID) {
		return fmt.Errorf("%w: id %q must be 1..%d bytes of [A-Za-z0-9_.:-]", ErrBudgetInvalid, clip(r.ID, 40), MaxIDLen)
	}
	if err := validateAccounts(Names(r.Accounts)); err != nil {
		return err
	}
	for _, a := range r.Accounts {
		for i, v := range [4]float64{float64(a.Caps.DayTokens), float64(a.Caps.MonthTokens), a.Caps.DayUSD, a.Caps.MonthUSD} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: account %s: %s is %v: want a number >= 0", ErrBudgetInvalid, a.Account, limitNames[i], v)
			}
		}
	}
	if r.MaxTokens < 0 || r.MaxUSD < 0 || math.IsNaN(r.MaxUSD) || math.IsInf(r.MaxUSD, 0) {
		return fmt.Errorf("%w: max_tokens %d / max_usd %v: want numbers >= 0", ErrBudgetInvalid, r.MaxTokens, r.MaxUSD)
	}
	if r.Lease <= 0 {
		return fmt.Errorf("%w: lease %v: want > 0", ErrBudgetInvalid, r.Lease)
	}
	if r.Now.IsZero() {
		return fmt.Errorf("%w: now is zero", ErrBudgetInvalid)
	}
	return nil
}

func (s Spend) validate() error {
	if s.Tokens < 0 || s.Prompt < 0 || s.Cached < 0 || s.Jobs < 0 || s.USD < 0 || math.IsNaN(s.USD) || math.IsInf(s.USD, 0) {
		return fmt.Errorf("%w: spend %+v: want numbers >= 0", ErrBudgetInvalid, s)
	}
	return nil
}

// decide is the reservation rule both stores follow (the Redis script
// says it again in Lua): used and held are each account's spend and
// reservations in store units (vector order). Pure.
func decide(r Reservation, used, held [][4]int64) (g Grant, tok, usd int64) {
	minLeft := [2]int64{-1, -1} // tokens, micro-USD; -1: no cap
	var at [2][2]int
	for i, a := range r.Accounts {
		caps := a.Caps.vector()
		for k := 0; k < 4; k++ {
			if caps[k] <= 0 {
				continue
			}
			if used[i][k] >= caps[k] {
				return refusal(GrantSpent, r, i, k, used[i][k], caps[k]), 0, 0
			}
			left := caps[k] - used[i][k] - held[i][k]
			side := k / 2
			if minLeft[side] < 0 || left < minLeft[side] {
				minLeft[side], at[side] = left, [2]int{i, k}
			}
		}
	}
	for side := 0; side < 2; side++ {
		if minLeft[side] >= 0 && minLeft[side] <= 0 {
			i, k := at[side][0], at[side][1]
			return refusal(GrantHeld, r, i, k, used[i][k]+held[i][k], r.Accounts[i].Caps.vector()[k]), 0, 0
		}
	}
	bound := func(left, max int64) int64 {
		switch {
		case left < 0:
			return max
		case max > 0 && max < left:
			return max
		}
		return left
	}
	tok, usd = bound(minLeft[0], r.MaxTokens), bound(minLeft[1], microUSD(r.MaxUSD))
	return Grant{Verdict: GrantOK, Tokens: tok, USD: fromMicro(usd)}, tok, usd
}

func refusal(v GrantVerdict, r Reservation, i, k int, used, max int64) Grant {
	g := Grant{Verdict: v, Account: r.Accounts[i].Account, Limit: limitNames[k], Used: float64(used), Max: float64(max), ResetAt: ResetAt(limitNames[k], r.Now)}
	if k >= 2 {
		g.Used, g.Max = fromMicro(used), fromMicro(max)
	}
	return g
}
