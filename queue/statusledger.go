package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// StatusEntry is one status message a front end has on screen for a job
// (a Telegram chat's "⏳ Working"), recorded outside the front end's
// process so that the next start of a front end killed without cleaning
// up (SIGKILL, OOM, power loss) finds it and marks it interrupted.
// Entries hold no message text, only ids and the asker's language.
type StatusEntry struct {
	Chat  int64     `json:"chat"`
	Msg   int       `json:"msg"`
	Job   string    `json:"job,omitempty"` // "" for a message not yet a job (held by the front end)
	Lang  string    `json:"lang,omitempty"`
	Since time.Time `json:"since"`
}

// MaxStatusEntries bounds what a status ledger's List reads (a ledger
// never holds more than the status messages of unfinished jobs).
const MaxStatusEntries = 100000

// MaxStatusEntryBytes bounds one entry read back.
const MaxStatusEntryBytes = 4096

func statusKey(chatID int64, msgID int) string {
	return strconv.FormatInt(chatID, 10) + "_" + strconv.Itoa(msgID)
}

// ParseStatusEntry decodes an entry read back from storage; an entry over
// MaxStatusEntryBytes, one that does not decode, or one that names no
// message is an error. Lang is returned as stored: the front end maps it
// to a language it speaks. Pure.
func ParseStatusEntry(data []byte) (StatusEntry, error) {
	var e StatusEntry
	if len(data) > MaxStatusEntryBytes {
		return e, fmt.Errorf("queue: status ledger entry of %d bytes (limit %d)", len(data), MaxStatusEntryBytes)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("queue: status ledger entry is not valid JSON: %w", err)
	}
	if e.Chat == 0 || e.Msg <= 0 {
		return e, fmt.Errorf("queue: status ledger entry names no message (chat %d, msg %d)", e.Chat, e.Msg)
	}
	return e, nil
}

// FileStatusLedger is a status ledger in a directory, one small file per
// status message (<chat>_<msg>.json), written atomically (temporary file
// and rename), so a crash leaves whole entries. odek-bot's default in
// embedded mode: $ODEK_HOME/telegram-status. Safe for concurrent use on
// distinct messages.
type FileStatusLedger struct{ Dir string }

// Put records e, replacing an entry for the same message.
func (f FileStatusLedger) Put(_ context.Context, e StatusEntry) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(f.Dir, ".entry-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(f.Dir, statusKey(e.Chat, e.Msg)+".json"))
}

// Delete forgets a message's entry; an absent entry is no error.
func (f FileStatusLedger) Delete(_ context.Context, chatID int64, msgID int) error {
	err := os.Remove(filepath.Join(f.Dir, statusKey(chatID, msgID)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// List returns the entries (at most MaxStatusEntries). An entry that
// cannot be read is reported in the error and removed: it could never be
// cleaned.
func (f FileStatusLedger) List(_ context.Context) ([]StatusEntry, error) {
	des, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []StatusEntry
	var errs []error
	for _, de := range des {
		if len(out) >= MaxStatusEntries {
			break
		}
		if !de.Type().IsRegular() || !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		p := filepath.Join(f.Dir, de.Name())
		data, err := readStatusFile(p)
		if err == nil {
			var e StatusEntry
			if e, err = ParseStatusEntry(data); err == nil {
				out = append(out, e)
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", de.Name(), err))
		os.Remove(p)
	}
	return out, errors.Join(errs...)
}

// readStatusFile reads an entry file of at most MaxStatusEntryBytes.
func readStatusFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxStatusEntryBytes {
		return nil, fmt.Errorf("queue: status ledger entry of %d bytes (limit %d)", fi.Size(), MaxStatusEntryBytes)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return data, nil
}

// RedisStatusLedger is a status ledger in one Redis hash (field
// <chat>_<msg>, value the entry's JSON). odek-bot's default in distributed
// mode, under the queue's key prefix (StatusLedgerKey). Safe for
// concurrent use.
type RedisStatusLedger struct {
	Client redis.UniversalClient
	Key    string
}

// StatusLedgerKey is the hash a front end's status ledger uses under the
// queue's key prefix.
func StatusLedgerKey(prefix string) string { return prefix + "telegram:status-ledger" }

// Put records e, replacing an entry for the same message.
func (r RedisStatusLedger) Put(ctx context.Context, e StatusEntry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return r.Client.HSet(ctx, r.Key, statusKey(e.Chat, e.Msg), data).Err()
}

// Delete forgets a message's entry; an absent entry is no error.
func (r RedisStatusLedger) Delete(ctx context.Context, chatID int64, msgID int) error {
	return r.Client.HDel(ctx, r.Key, statusKey(chatID, msgID)).Err()
}

// List returns the entries (at most MaxStatusEntries); an entry that does
// not parse is reported in the error and removed.
func (r RedisStatusLedger) List(ctx context.Context) ([]StatusEntry, error) {
	var out []StatusEntry
	var errs []error
	var cursor uint64
	for {
		kv, next, err := r.Client.HScan(ctx, r.Key, cursor, "*", 512).Result()
		if err != nil {
			return out, err
		}
		for i := 0; i+1 < len(kv) && len(out) < MaxStatusEntries; i += 2 {
			e, err := ParseStatusEntry([]byte(kv[i+1]))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", kv[i], err))
				r.Client.HDel(ctx, r.Key, kv[i])
				continue
			}
			out = append(out, e)
		}
		if cursor = next; cursor == 0 || len(out) >= MaxStatusEntries {
			return out, errors.Join(errs...)
		}
	}
}
