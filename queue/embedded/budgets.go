package embedded

import (
	"context"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/odekrun/odek/queue"
)

// budgetBucket holds the budget store's records (queue.BudgetBook's
// layout): spend per account and period, reservations, the policy.
const budgetBucket = "budgets"

// budgetState is the store's budget book, loaded from the file on first
// use; every change is written in one bbolt transaction (shared with
// concurrent writers: bbolt's batch) before the operation returns, so a
// crash loses no spend that was counted and no reservation that was
// granted. The embedded store is held by one process (its flock), so the
// book in memory is the truth and its mutex makes each operation atomic.
type budgetState struct {
	once sync.Once
	book *queue.BudgetBook
	err  error
}

func (s *Store) book() (*queue.BudgetBook, error) {
	s.bs.once.Do(func() {
		recs := map[string][]byte{}
		err := s.List(context.Background(), budgetBucket, 0, func(k string, v []byte) error {
			recs[k] = append([]byte(nil), v...)
			return nil
		})
		if err == nil {
			s.bs.book, err = queue.LoadBudgetBook(recs)
		}
		if err != nil {
			s.bs.err = err
			return
		}
		b, _ := kvBucket(budgetBucket)
		s.bs.book.Persist = func(puts map[string][]byte, dels []string) error {
			return s.db.Batch(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists(b)
				if err != nil {
					return err
				}
				for k, v := range puts {
					if err := bk.Put([]byte(k), v); err != nil {
						return err
					}
				}
				for _, k := range dels {
					if err := bk.Delete([]byte(k)); err != nil {
						return err
					}
				}
				return nil
			})
		}
	})
	return s.bs.book, s.bs.err
}

// ReserveBudget implements queue.Budgets, durably.
func (s *Store) ReserveBudget(ctx context.Context, r queue.Reservation) (queue.Grant, error) {
	b, err := s.book()
	if err != nil {
		return queue.Grant{}, err
	}
	return b.ReserveBudget(ctx, r)
}

// SettleBudget implements queue.Budgets, durably.
func (s *Store) SettleBudget(ctx context.Context, id string, accounts []string, sp queue.Spend, now time.Time) (bool, error) {
	b, err := s.book()
	if err != nil {
		return false, err
	}
	return b.SettleBudget(ctx, id, accounts, sp, now)
}

// ReleaseBudget implements queue.Budgets, durably.
func (s *Store) ReleaseBudget(ctx context.Context, id string) error {
	b, err := s.book()
	if err != nil {
		return err
	}
	return b.ReleaseBudget(ctx, id)
}

// BudgetUsage implements queue.Budgets.
func (s *Store) BudgetUsage(ctx context.Context, account string, now time.Time) (queue.AccountUsage, error) {
	b, err := s.book()
	if err != nil {
		return queue.AccountUsage{}, err
	}
	return b.BudgetUsage(ctx, account, now)
}

// BudgetAccounts implements queue.Budgets.
func (s *Store) BudgetAccounts(ctx context.Context, max int) ([]string, error) {
	b, err := s.book()
	if err != nil {
		return nil, err
	}
	return b.BudgetAccounts(ctx, max)
}

// PutBudgetPolicy implements queue.Budgets, durably.
func (s *Store) PutBudgetPolicy(ctx context.Context, p queue.BudgetPolicy) error {
	b, err := s.book()
	if err != nil {
		return err
	}
	return b.PutBudgetPolicy(ctx, p)
}

// BudgetPolicy implements queue.Budgets.
func (s *Store) BudgetPolicy(ctx context.Context) (queue.BudgetPolicy, bool, error) {
	b, err := s.book()
	if err != nil {
		return queue.BudgetPolicy{}, false, err
	}
	return b.BudgetPolicy(ctx)
}

var _ queue.Budgets = (*Store)(nil)
