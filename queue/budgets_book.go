package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// BudgetBook is the in-process budget store: *Memory's (tests, volatile
// embedded use) and, with Persist and LoadBudgetBook, the embedded store's
// (queue/embedded writes each change to bbolt before it returns). One
// mutex makes each operation atomic; it follows the same rule as the
// Redis script (decide). Safe for concurrent use.
type BudgetBook struct {
	// Persist, when set, makes a change durable before the operation
	// returns: puts and deletes of the book's records (BudgetRecordKey
	// layout). An error undoes nothing in memory but fails the operation;
	// the store is then as durable as its last successful write.
	Persist func(puts map[string][]byte, dels []string) error

	mu     sync.Mutex
	use    map[string]*spendRec // "use/<account>/<period>"
	recs   map[string]*budgetRec
	live   map[string]*budgetRec // the unsettled among recs (what may hold)
	active map[string]time.Time
	policy *BudgetPolicy
	pruned time.Time
}

type spendRec struct {
	Tok  int64 `json:"tok,omitempty"`
	Prm  int64 `json:"prm,omitempty"`
	Cch  int64 `json:"cch,omitempty"`
	USD  int64 `json:"usd,omitempty"` // micro-USD
	Jobs int64 `json:"jobs,omitempty"`
}

func (s spendRec) spend() Spend {
	return Spend{Tokens: s.Tok, Prompt: s.Prm, Cached: s.Cch, USD: fromMicro(s.USD), Jobs: s.Jobs}
}

type budgetRec struct {
	Accounts []string  `json:"accounts"`
	Tok      int64     `json:"tok,omitempty"`
	USD      int64     `json:"usd,omitempty"`
	Exp      time.Time `json:"exp"` // the lease's end
	Settled  bool      `json:"settled,omitempty"`
	Keep     time.Time `json:"keep"` // the record's end
}

// NewBudgetBook returns an empty in-memory book.
func NewBudgetBook() *BudgetBook {
	return &BudgetBook{use: map[string]*spendRec{}, recs: map[string]*budgetRec{}, live: map[string]*budgetRec{}, active: map[string]time.Time{}}
}

// LoadBudgetBook rebuilds a book from the records Persist wrote.
func LoadBudgetBook(records map[string][]byte) (*BudgetBook, error) {
	b := NewBudgetBook()
	for k, v := range records {
		var err error
		switch kind, rest, _ := strings.Cut(k, "/"); kind {
		case "use":
			var s spendRec
			if err = json.Unmarshal(v, &s); err == nil {
				b.use[k] = &s
			}
		case "rec":
			var r budgetRec
			if err = json.Unmarshal(v, &r); err == nil {
				b.recs[rest] = &r
				if !r.Settled {
					b.live[rest] = &r
				}
			}
		case "act":
			var t time.Time
			if err = json.Unmarshal(v, &t); err == nil {
				b.active[rest] = t
			}
		case "policy":
			var p BudgetPolicy
			if err = json.Unmarshal(v, &p); err == nil {
				b.policy = &p
			}
		}
		if err != nil {
			return nil, fmt.Errorf("queue: budget record %q does not decode: %w", clip(k, 80), err)
		}
	}
	return b, nil
}

func useKey(account, period string) string { return "use/" + account + "/" + period }

// changes collects one operation's writes for Persist.
type changes struct {
	puts map[string][]byte
	dels []string
}

func (c *changes) put(k string, v any) {
	if c.puts == nil {
		c.puts = map[string][]byte{}
	}
	b, _ := json.Marshal(v)
	c.puts[k] = b
}

func (b *BudgetBook) commit(c *changes) error {
	if b.Persist == nil || (len(c.puts) == 0 && len(c.dels) == 0) {
		return nil
	}
	return b.Persist(c.puts, c.dels)
}

// heldLocked is what account's live reservations hold at now.
func (b *BudgetBook) heldLocked(account string, now time.Time) (tok, usd int64) {
	for _, r := range b.live {
		if !now.Before(r.Exp) {
			continue
		}
		for _, a := range r.Accounts {
			if a == account {
				tok += r.Tok
				usd += r.USD
			}
		}
	}
	return tok, usd
}

func (b *BudgetBook) usedLocked(account string, now time.Time) [4]int64 {
	var d, m spendRec
	if s := b.use[useKey(account, "d"+Day(now))]; s != nil {
		d = *s
	}
	if s := b.use[useKey(account, "m"+Month(now))]; s != nil {
		m = *s
	}
	return [4]int64{d.Tok, m.Tok, d.USD, m.USD}
}

// pruneLocked drops ended records and old spend, at most once a minute.
func (b *BudgetBook) pruneLocked(now time.Time, c *changes) {
	if now.Sub(b.pruned) < time.Minute {
		return
	}
	b.pruned = now
	for id, r := range b.recs {
		if !now.Before(r.Keep) {
			delete(b.recs, id)
			delete(b.live, id)
			c.dels = append(c.dels, "rec/"+id)
		}
	}
	dayCut, monthCut := "d"+Day(now.Add(-dayKeep)), "m"+Month(now.Add(-monthKeep))
	for k := range b.use {
		p := k[strings.LastIndexByte(k, '/')+1:]
		if p[0] == 'd' && p < dayCut || p[0] == 'm' && p < monthCut {
			delete(b.use, k)
			c.dels = append(c.dels, k)
		}
	}
}

// ReserveBudget implements Budgets.
func (b *BudgetBook) ReserveBudget(ctx context.Context, r Reservation) (Grant, error) {
	if err := r.validate(); err != nil {
		return Grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var c changes
	b.pruneLocked(r.Now, &c)
	if old := b.recs[r.ID]; old != nil {
		if old.Settled {
			return Grant{}, fmt.Errorf("%w: %s", ErrBudgetSettled, r.ID)
		}
		if r.Now.Before(old.Exp) {
			return Grant{Verdict: GrantOK, Tokens: old.Tok, USD: fromMicro(old.USD)}, b.commit(&c)
		}
	}
	used, held := make([][4]int64, len(r.Accounts)), make([][4]int64, len(r.Accounts))
	for i, a := range r.Accounts {
		used[i] = b.usedLocked(a.Account, r.Now)
		t, u := b.heldLocked(a.Account, r.Now)
		held[i] = [4]int64{t, t, u, u}
	}
	g, tok, usd := decide(r, used, held)
	if g.Verdict != GrantOK {
		return g, b.commit(&c)
	}
	rec := &budgetRec{Accounts: Names(r.Accounts), Tok: tok, USD: usd, Exp: r.Now.Add(r.Lease), Keep: r.Now.Add(max(r.Lease, 0) + recordKeep)}
	b.recs[r.ID], b.live[r.ID] = rec, rec
	c.put("rec/"+r.ID, rec)
	for _, a := range rec.Accounts {
		b.active[a] = r.Now
		c.put("act/"+a, r.Now)
	}
	return g, b.commit(&c)
}

// SettleBudget implements Budgets.
func (b *BudgetBook) SettleBudget(ctx context.Context, id string, accounts []string, s Spend, now time.Time) (bool, error) {
	if !validID(id) {
		return false, fmt.Errorf("%w: id %q", ErrBudgetInvalid, clip(id, 40))
	}
	if err := s.validate(); err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.recs[id]
	if rec != nil && rec.Settled {
		return false, nil
	}
	if rec != nil {
		accounts = rec.Accounts
	} else {
		rec = &budgetRec{Accounts: accounts}
	}
	if err := validateAccounts(accounts); err != nil {
		return false, err
	}
	var c changes
	for _, a := range accounts {
		for _, p := range []string{"d" + Day(now), "m" + Month(now)} {
			k := useKey(a, p)
			u := b.use[k]
			if u == nil {
				u = &spendRec{}
				b.use[k] = u
			}
			u.Tok += s.Tokens
			u.Prm += s.Prompt
			u.Cch += s.Cached
			u.USD += microUSD(s.USD)
			u.Jobs += s.Jobs
			c.put(k, u)
		}
		b.active[a] = now
		c.put("act/"+a, now)
	}
	rec.Settled, rec.Tok, rec.USD, rec.Keep = true, 0, 0, now.Add(recordKeep)
	b.recs[id] = rec
	delete(b.live, id)
	c.put("rec/"+id, rec)
	return true, b.commit(&c)
}

// ReleaseBudget implements Budgets.
func (b *BudgetBook) ReleaseBudget(ctx context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.recs[id]
	if rec == nil || rec.Settled {
		return nil
	}
	delete(b.recs, id)
	delete(b.live, id)
	return b.commit(&changes{dels: []string{"rec/" + id}})
}

// BudgetUsage implements Budgets.
func (b *BudgetBook) BudgetUsage(ctx context.Context, account string, now time.Time) (AccountUsage, error) {
	if !validAccount(account) {
		return AccountUsage{}, fmt.Errorf("%w: account %q", ErrBudgetInvalid, clip(account, 70))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	u := AccountUsage{Account: account}
	for _, p := range historyPeriods(now) {
		if s := b.use[useKey(account, p)]; s != nil && *s != (spendRec{}) {
			ps := PeriodSpend{Period: p[1:], Spend: s.spend()}
			if p[0] == 'd' {
				u.Days = append(u.Days, ps)
			} else {
				u.Months = append(u.Months, ps)
			}
		}
	}
	t, usd := b.heldLocked(account, now)
	u.ReservedTokens, u.ReservedUSD = t, fromMicro(usd)
	return u, nil
}

// historyPeriods are the store periods BudgetUsage reads, newest first:
// HistoryDays days ("d2026-12-03"), then HistoryMonths months.
func historyPeriods(now time.Time) []string {
	out := make([]string, 0, HistoryDays+HistoryMonths)
	for i := 0; i < HistoryDays; i++ {
		out = append(out, "d"+Day(now.AddDate(0, 0, -i)))
	}
	u := now.UTC()
	first := time.Date(u.Year(), u.Month(), 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < HistoryMonths; i++ {
		out = append(out, "m"+Month(first.AddDate(0, -i, 0)))
	}
	return out
}

// BudgetAccounts implements Budgets.
func (b *BudgetBook) BudgetAccounts(ctx context.Context, max int) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.active))
	for a := range b.active {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		ti, tj := b.active[out[i]], b.active[out[j]]
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return out[i] < out[j]
	})
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out, nil
}

// PutBudgetPolicy implements Budgets.
func (b *BudgetBook) PutBudgetPolicy(ctx context.Context, p BudgetPolicy) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var c changes
	c.put("policy", p)
	// A copy that shares nothing with the caller.
	var cp BudgetPolicy
	_ = json.Unmarshal(c.puts["policy"], &cp)
	b.policy = &cp
	return b.commit(&c)
}

// BudgetPolicy implements Budgets.
func (b *BudgetBook) BudgetPolicy(ctx context.Context) (BudgetPolicy, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.policy == nil {
		return BudgetPolicy{}, false, nil
	}
	raw, _ := json.Marshal(b.policy)
	var cp BudgetPolicy
	_ = json.Unmarshal(raw, &cp)
	return cp, true, nil
}

// Memory's budgets: an in-memory book, made on first use.

func (m *Memory) book() *BudgetBook {
	m.bookOnce.Do(func() { m.bb = NewBudgetBook() })
	return m.bb
}

// ReserveBudget implements Budgets (in memory).
func (m *Memory) ReserveBudget(ctx context.Context, r Reservation) (Grant, error) {
	return m.book().ReserveBudget(ctx, r)
}

// SettleBudget implements Budgets (in memory).
func (m *Memory) SettleBudget(ctx context.Context, id string, accounts []string, s Spend, now time.Time) (bool, error) {
	return m.book().SettleBudget(ctx, id, accounts, s, now)
}

// ReleaseBudget implements Budgets (in memory).
func (m *Memory) ReleaseBudget(ctx context.Context, id string) error {
	return m.book().ReleaseBudget(ctx, id)
}

// BudgetUsage implements Budgets (in memory).
func (m *Memory) BudgetUsage(ctx context.Context, account string, now time.Time) (AccountUsage, error) {
	return m.book().BudgetUsage(ctx, account, now)
}

// BudgetAccounts implements Budgets (in memory).
func (m *Memory) BudgetAccounts(ctx context.Context, max int) ([]string, error) {
	return m.book().BudgetAccounts(ctx, max)
}

// PutBudgetPolicy implements Budgets (in memory).
func (m *Memory) PutBudgetPolicy(ctx context.Context, p BudgetPolicy) error {
	return m.book().PutBudgetPolicy(ctx, p)
}

// BudgetPolicy implements Budgets (in memory).
func (m *Memory) BudgetPolicy(ctx context.Context) (BudgetPolicy, bool, error) {
	return m.book().BudgetPolicy(ctx)
}
