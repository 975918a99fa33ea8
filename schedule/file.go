package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// File is the embedded-mode Store: every schedule and pending fire in one
// JSON file, read and rewritten (write to a temporary file, fsync, rename)
// under an exclusive flock on <path>.lock for every call, so several
// processes on one host (odek-bot and `odek schedule`) share it safely
// and a crash leaves the old or the new file, never a mix. With path ""
// the state lives in memory only (tests, and a process that persists
// nothing). Schedules are few per host; the whole-file rewrite is the
// price of having no other dependency until the embedded store lands.
type File struct {
	path string
	mu   sync.Mutex
	mem  fileState
	// kv, when set, holds the state instead of path (NewKV).
	kv       KV
	kvLoaded bool
}

type fileState struct {
	Version   int                  `json:"version"`
	Schedules map[string]*Schedule `json:"schedules"`
	Fires     map[string]*Fire     `json:"fires"`
	// Zones are the chats' time zones by chat id.
	Zones map[string]string `json:"zones,omitempty"`
}

// NewFile returns a File store at path ("" = in memory). The directory
// must exist; the file is created on the first change.
func NewFile(path string) *File {
	return &File{path: path, mem: fileState{Version: 1, Schedules: map[string]*Schedule{}, Fires: map[string]*Fire{}}}
}

// update runs fn on the current state under the locks and saves it when
// fn returns nil and changed is set.
func (f *File) update(write bool, fn func(st *fileState) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kv != nil {
		return f.updateKV(write, fn)
	}
	if f.path == "" {
		if !write {
			return fn(&f.mem)
		}
		// Work on a copy so a failing fn changes nothing.
		cp := f.mem.clone()
		if err := fn(&cp); err != nil {
			return err
		}
		f.mem = cp
		return nil
	}
	lk, err := os.OpenFile(f.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("schedule: open lock: %w", err)
	}
	defer lk.Close()
	if err := lockFile(lk, write); err != nil {
		return fmt.Errorf("schedule: lock %s: %w", f.path, err)
	}
	defer unlockFile(lk)
	st := fileState{Version: 1, Schedules: map[string]*Schedule{}, Fires: map[string]*Fire{}}
	b, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("schedule: read %s: %w", f.path, err)
	default:
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("schedule: %s is not a schedule file: %w", f.path, err)
		}
		if st.Schedules == nil {
			st.Schedules = map[string]*Schedule{}
		}
		if st.Fires == nil {
			st.Fires = map[string]*Fire{}
		}
	}
	if st.Zones == nil {
		st.Zones = map[string]string{}
	}
	if err := fn(&st); err != nil || !write {
		return err
	}
	out, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("schedule: encode: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), filepath.Base(f.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("schedule: write %s: %w", f.path, err)
	}
	_, werr := tmp.Write(out)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o600)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), f.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("schedule: write %s: %w", f.path, werr)
	}
	return nil
}

func (st fileState) clone() fileState {
	cp := fileState{Version: st.Version, Schedules: make(map[string]*Schedule, len(st.Schedules)), Fires: make(map[string]*Fire, len(st.Fires))}
	for k, v := range st.Schedules {
		s := *v
		cp.Schedules[k] = &s
	}
	for k, v := range st.Fires {
		fi := *v
		cp.Fires[k] = &fi
	}
	cp.Zones = make(map[string]string, len(st.Zones))
	for k, v := range st.Zones {
		cp.Zones[k] = v
	}
	return cp
}

// Create implements Store.
func (f *File) Create(ctx context.Context, s Schedule, maxPerChat int) error {
	if !validID(s.ID) {
		return invalid("id", "%q", clip(s.ID, 40))
	}
	s.Next = s.Next.UTC().Truncate(time.Millisecond)
	return f.update(true, func(st *fileState) error {
		if _, ok := st.Schedules[s.ID]; ok {
			return fmt.Errorf("%w: id %s exists", ErrConflict, s.ID)
		}
		if maxPerChat > 0 {
			n := 0
			for _, o := range st.Schedules {
				if o.ChatID == s.ChatID {
					n++
				}
			}
			if n >= maxPerChat {
				return limitErr(n)
			}
		}
		st.Schedules[s.ID] = &s
		return nil
	})
}

// Get implements Store.
func (f *File) Get(ctx context.Context, id string) (Schedule, error) {
	var out Schedule
	err := f.update(false, func(st *fileState) error {
		s, ok := st.Schedules[id]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNotFound, clip(id, 40))
		}
		out = *s
		return nil
	})
	return out, err
}

// List implements Store.
func (f *File) List(ctx context.Context, chatID int64) ([]Schedule, error) {
	var out []Schedule
	err := f.update(false, func(st *fileState) error {
		for _, s := range st.Schedules {
			if chatID == 0 || s.ChatID == chatID {
				out = append(out, *s)
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// SetEnabled implements Store.
func (f *File) SetEnabled(ctx context.Context, id string, enabled bool, next time.Time) (Schedule, error) {
	var out Schedule
	err := f.update(true, func(st *fileState) error {
		s, ok := st.Schedules[id]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNotFound, clip(id, 40))
		}
		s.Enabled = enabled && !next.IsZero()
		s.Next = time.Time{}
		if s.Enabled {
			s.Next = next.UTC().Truncate(time.Millisecond)
		}
		out = *s
		return nil
	})
	return out, err
}

// Delete implements Store.
func (f *File) Delete(ctx context.Context, id string) error {
	return f.update(true, func(st *fileState) error {
		if _, ok := st.Schedules[id]; !ok {
			return fmt.Errorf("%w: %q", ErrNotFound, clip(id, 40))
		}
		delete(st.Schedules, id)
		return nil
	})
}

// Due implements Store.
func (f *File) Due(ctx context.Context, now time.Time, max int) ([]Schedule, error) {
	var out []Schedule
	err := f.update(false, func(st *fileState) error {
		for _, s := range st.Schedules {
			if s.Enabled && !s.Next.IsZero() && !s.Next.After(now) {
				out = append(out, *s)
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Next.Equal(out[j].Next) {
			return out[i].Next.Before(out[j].Next)
		}
		return out[i].ID < out[j].ID
	})
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out, err
}

// Claim implements Store.
func (f *File) Claim(ctx context.Context, c Claim) (Fire, error) {
	if err := validateClaim(c); err != nil {
		return Fire{}, err
	}
	var out Fire
	err := f.update(true, func(st *fileState) error {
		s, ok := st.Schedules[c.ID]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNotFound, c.ID)
		}
		if !c.Manual {
			if !s.Enabled || !s.Next.Equal(c.Expected) {
				return ErrConflict
			}
			s.Next = c.Next.UTC().Truncate(time.Millisecond)
			s.Enabled = !c.Next.IsZero()
			if !s.Enabled {
				s.Next = time.Time{}
			}
		}
		s.Misses += c.Missed
		if c.Job.IdempotencyKey == "" {
			s.Last, s.LastStatus, s.LastError = c.At.UTC(), c.Status, c.Error
			return nil
		}
		key := fireField(c.ID, c.At)
		if _, ok := st.Fires[key]; ok {
			return fmt.Errorf("%w: fire %s is pending", ErrConflict, key)
		}
		out = Fire{ScheduleID: c.ID, At: c.At.UTC().Truncate(time.Millisecond), Job: c.Job, Owner: c.Owner, Token: newToken(),
			Deadline: c.Now.Add(c.Lease).UTC().Truncate(time.Millisecond)}
		fi := out
		st.Fires[key] = &fi
		return nil
	})
	return out, err
}

// Complete implements Store.
func (f *File) Complete(ctx context.Context, fi Fire, r FireResult) error {
	return f.update(true, func(st *fileState) error {
		key := fireField(fi.ScheduleID, fi.At)
		p, ok := st.Fires[key]
		if !ok || p.Token != fi.Token {
			return fmt.Errorf("%w: fire %s is no longer held by this token", ErrConflict, key)
		}
		delete(st.Fires, key)
		if s, ok := st.Schedules[fi.ScheduleID]; ok {
			s.Last, s.LastJobID, s.LastError = fi.At.UTC(), r.JobID, r.Err
			s.LastStatus = StatusEnqueued
			if r.Err != "" {
				s.LastStatus = StatusFailed
			}
			s.Fires++
		}
		return nil
	})
}

// Reclaim implements Store.
func (f *File) Reclaim(ctx context.Context, now time.Time, owner string, lease time.Duration, max int) ([]Fire, error) {
	var out []Fire
	err := f.update(true, func(st *fileState) error {
		keys := make([]string, 0, len(st.Fires))
		for k, p := range st.Fires {
			if !p.Deadline.After(now) {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool { return st.Fires[keys[i]].Deadline.Before(st.Fires[keys[j]].Deadline) })
		for _, k := range keys {
			if max > 0 && len(out) >= max {
				break
			}
			p := st.Fires[k]
			p.Owner, p.Token, p.Deadline = owner, newToken(), now.Add(lease).UTC()
			p.Reclaimed++
			out = append(out, *p)
		}
		return nil
	})
	return out, err
}

// Pending implements Store.
func (f *File) Pending(ctx context.Context) (int, error) {
	n := 0
	err := f.update(false, func(st *fileState) error { n = len(st.Fires); return nil })
	return n, err
}

func newToken() string { return newID() + newID() }
