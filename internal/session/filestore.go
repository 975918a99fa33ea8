package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/internal/atomicfile"
)

// MaxFileBytes bounds a session file FileStore will read.
const MaxFileBytes = 256 << 20

// fileVersion is the format version written into every session file.
const fileVersion = 1

const fileExt = ".json"

// FileStore keeps one JSON file per session, named <id>.json, in Dir. Files
// are written with mode 0600 through a temporary file, fsync and rename (and
// the directory is synced), so a crash leaves the old or the new session.
// Dir is created with mode 0700 when missing. The zero value is not usable:
// Dir must be set (the CLI uses ~/.odek/sessions).
//
// FileStore is safe for concurrent use by one process; Save calls for the
// same id from several processes race, the last rename winning.
type FileStore struct {
	// Dir holds the session files.
	Dir string
	// Now stamps CreatedAt/UpdatedAt; nil means time.Now.
	Now func() time.Time
}

var _ Store = (*FileStore)(nil)

// fileData is the on-disk form: Session plus a format version.
type fileData struct {
	Version int `json:"version"`
	*Session
}

func (f *FileStore) now() time.Time {
	if f.Now != nil {
		return f.Now().UTC()
	}
	return time.Now().UTC()
}

func (f *FileStore) path(id string) string { return filepath.Join(f.Dir, id+fileExt) }

func (f *FileStore) ensureDir() error {
	if f.Dir == "" {
		return errors.New("session: FileStore.Dir is empty")
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("session: creating store directory: %w", err)
	}
	return nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Save implements Store.
func (f *FileStore) Save(ctx context.Context, s *Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if err := f.ensureDir(); err != nil {
		return err
	}
	now := f.now()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	s.UpdatedAt = now

	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<20 {
			bufPool.Put(buf)
		}
	}()
	if err := json.NewEncoder(buf).Encode(fileData{Version: fileVersion, Session: s}); err != nil {
		return fmt.Errorf("session: encoding %s: %w", s.ID, err)
	}
	if buf.Len() > MaxFileBytes {
		return fmt.Errorf("session: %s encodes to %d bytes, exceeding the limit MaxFileBytes=%d", s.ID, buf.Len(), MaxFileBytes)
	}
	return writeAtomic(f.Dir, s.ID+fileExt, buf.Bytes())
}

// writeAtomic replaces dir/name with data through atomicfile (a 0600 temp
// file in dir, fsync, rename, directory fsync).
func writeAtomic(dir, name string, data []byte) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// Load implements Store.
func (f *FileStore) Load(ctx context.Context, id string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	data, err := readBounded(f.path(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return nil, err
	}
	return decode(id, data)
}

func readBounded(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("session: reading %s: %w", filepath.Base(path), err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is larger than the limit MaxFileBytes=%d", ErrCorrupt, filepath.Base(path), MaxFileBytes)
	}
	return data, nil
}

func decode(id string, data []byte) (*Session, error) {
	s := new(Session)
	fd := fileData{Session: s}
	if err := json.Unmarshal(data, &fd); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, id, err)
	}
	if fd.Version != fileVersion {
		return nil, fmt.Errorf("%w: %s: format version %d, want %d", ErrCorrupt, id, fd.Version, fileVersion)
	}
	if s.ID != id {
		return nil, fmt.Errorf("%w: %s: file holds session id %q", ErrCorrupt, id, clip(s.ID))
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, id, err)
	}
	return s, nil
}

// Latest implements Store: the session with the newest UpdatedAt (ties
// broken by id).
func (f *FileStore) Latest(ctx context.Context) (*Session, error) {
	sums, err := f.List(ctx)
	if err != nil {
		return nil, err
	}
	if len(sums) == 0 {
		return nil, fmt.Errorf("%w: no sessions in %s", ErrNotFound, f.Dir)
	}
	return f.Load(ctx, sums[0].ID)
}

// List implements Store. Files whose names are not <valid id>.json are
// ignored; an unreadable session file is an error naming it.
func (f *FileStore) List(ctx context.Context) ([]Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session: listing %s: %w", f.Dir, err)
	}
	var out []Summary
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), fileExt)
		if !ok || !e.Type().IsRegular() || ValidateID(id) != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := f.Load(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Summarize(s))
	}
	sortSummaries(out)
	return out, nil
}

// sortSummaries orders most recently updated first, then by id.
func sortSummaries(s []Summary) {
	slices.SortFunc(s, func(a, b Summary) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// Delete implements Store.
func (f *FileStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateID(id); err != nil {
		return err
	}
	if err := os.Remove(f.path(id)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return fmt.Errorf("session: deleting %s: %w", id, err)
	}
	return nil
}
