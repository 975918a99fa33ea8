package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// KV is the part of a key-value store a KV-backed Store needs: the
// embedded store's buckets (queue/embedded.Store.Get and Put), where Put
// is durable when it returns.
type KV interface {
	Get(ctx context.Context, bucket, key string) ([]byte, error)
	Put(ctx context.Context, bucket, key string, val []byte) error
}

// KV bucket and key of the schedules' state in an embedded store.
const (
	KVBucket = "schedules"
	KVKey    = "state"
)

// NewKV returns the Store of odek-bot's embedded mode: the schedules, their
// pending fires and the chats' zones live in the same bbolt database as
// the embedded queue (one file, one backup, one lock), as one value
// rewritten durably on every change. The embedded store is held by one
// process at a time (its flock), so this Store keeps the state in memory
// after the first read and serialises changes with its mutex: each
// change is atomic, and a change that fails to persist changes nothing.
// It is the File store with another place to keep its state; both pass
// the same conformance tests.
func NewKV(kv KV) *File {
	f := NewFile("")
	f.kv = kv
	return f
}

func (f *File) updateKV(write bool, fn func(st *fileState) error) error {
	ctx := context.Background()
	if !f.kvLoaded {
		b, err := f.kv.Get(ctx, KVBucket, KVKey)
		if err != nil {
			return fmt.Errorf("schedule: read the embedded store: %w", err)
		}
		st := fileState{Version: 1, Schedules: map[string]*Schedule{}, Fires: map[string]*Fire{}, Zones: map[string]string{}}
		if b != nil {
			if err := json.Unmarshal(b, &st); err != nil {
				return fmt.Errorf("schedule: the embedded store's schedules do not decode: %w", err)
			}
		}
		if st.Schedules == nil {
			st.Schedules = map[string]*Schedule{}
		}
		if st.Fires == nil {
			st.Fires = map[string]*Fire{}
		}
		f.mem, f.kvLoaded = st, true
	}
	if !write {
		return fn(&f.mem)
	}
	cp := f.mem.clone()
	if err := fn(&cp); err != nil {
		return err
	}
	out, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("schedule: encode: %w", err)
	}
	if err := f.kv.Put(ctx, KVBucket, KVKey, out); err != nil {
		return fmt.Errorf("schedule: write the embedded store: %w", err)
	}
	f.mem = cp
	return nil
}

// Retry implements Store.
func (f *File) Retry(ctx context.Context, id string, at, next time.Time, max int) (Schedule, error) {
	var out Schedule
	err := f.update(true, func(st *fileState) error {
		s, ok := st.Schedules[id]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNotFound, clip(id, 40))
		}
		if s.Enabled || !s.Last.Equal(at.UTC().Truncate(time.Millisecond)) || s.Retries >= max {
			return fmt.Errorf("%w: schedule %s is not waiting for a retry of its fire at %s", ErrConflict, id, at.UTC().Format(time.RFC3339))
		}
		s.Enabled, s.Next = true, next.UTC().Truncate(time.Millisecond)
		s.Retries++
		out = *s
		return nil
	})
	return out, err
}

// Zone implements Store.
func (f *File) Zone(ctx context.Context, chatID int64) (string, error) {
	var tz string
	err := f.update(false, func(st *fileState) error { tz = st.Zones[strconv.FormatInt(chatID, 10)]; return nil })
	return tz, err
}

// SetZone implements Store.
func (f *File) SetZone(ctx context.Context, chatID int64, tz string) error {
	return f.update(true, func(st *fileState) error {
		if st.Zones == nil {
			st.Zones = map[string]string{}
		}
		k := strconv.FormatInt(chatID, 10)
		if tz == "" {
			delete(st.Zones, k)
		} else {
			st.Zones[k] = tz
		}
		return nil
	})
}
