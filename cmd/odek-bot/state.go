package main

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

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot"
	"github.com/odekrun/odek/internal/atomicfile"
	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
)

// maxStateBytes bounds the state file read at start-up.
const maxStateBytes = 64 << 20

// fileState is the bot's StateStore in one JSON file, replaced atomically
// (write to a temporary file in the same directory, fsync, rename, fsync
// the directory), so a crash leaves the old or the new snapshot. Used in
// distributed mode when ODEK_TELEGRAM_STATE_FILE is set; embedded mode
// imports that file into its store once.
type fileState struct{ path string }

func (f fileState) Load(ctx context.Context) ([]byte, error) {
	fi, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxStateBytes {
		return nil, errors.New("state file is larger than 64 MiB; not read")
	}
	return os.ReadFile(f.path)
}

func (f fileState) Save(ctx context.Context, data []byte) error {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(f.path, data, 0o600)
}

// Buckets and keys of the bot's own data in the embedded store.
const (
	botBucket    = "bot"           // "state": the chat-state snapshot
	ledgerBucket = "status-ledger" // "<chat>_<msg>": queue.StatusEntry JSON
	importBucket = "imported"      // "state:<path>", "ledger:<dir>": when imported
	stateKey     = "state"
)

// storeState is the bot's StateStore in the embedded store: one value,
// replaced in one durable transaction.
type storeState struct{ s *estore.Store }

func (st storeState) Load(ctx context.Context) ([]byte, error) {
	return st.s.Get(ctx, botBucket, stateKey)
}

func (st storeState) Save(ctx context.Context, data []byte) error {
	return st.s.Put(ctx, botBucket, stateKey, data)
}

// storeLedger is the bot's StatusLedger in the embedded store.
type storeLedger struct{ s *estore.Store }

func ledgerKey(chat int64, msg int) string {
	return strconv.FormatInt(chat, 10) + "_" + strconv.Itoa(msg)
}

func (l storeLedger) Put(ctx context.Context, e queue.StatusEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return l.s.Put(ctx, ledgerBucket, ledgerKey(e.Chat, e.Msg), b)
}

func (l storeLedger) Delete(ctx context.Context, chat int64, msg int) error {
	return l.s.Delete(ctx, ledgerBucket, ledgerKey(chat, msg))
}

func (l storeLedger) List(ctx context.Context) ([]queue.StatusEntry, error) {
	var out []queue.StatusEntry
	var bad []string
	err := l.s.List(ctx, ledgerBucket, queue.MaxStatusEntries, func(k string, v []byte) error {
		e, err := parseLedger(v)
		if err != nil {
			bad = append(bad, k)
			return nil
		}
		out = append(out, e)
		return nil
	})
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("odek-bot: %d status-ledger entries do not decode (first %q); skipped", len(bad), bad[0])
	}
	return out, err
}

// parseLedger decodes one ledger entry (from the store or an old ledger
// file) with the queue's rules. Pure.
func parseLedger(v []byte) (queue.StatusEntry, error) { return queue.ParseStatusEntry(v) }

// importNote is written beside an imported state file or into an imported
// ledger directory.
const importNote = "Imported into the embedded store %s at %s; odek-bot no longer reads this. Remove it when you like.\n"

// importOld moves a state file and a ledger directory of an older odek-bot
// into the store, once: a marker in the store (per path) makes a second
// start skip it, and the old files are left with a note beside them. The
// state file is imported only when the store holds no state yet (a newer
// snapshot is never overwritten). Returns what it imported.
func importOld(ctx context.Context, s *estore.Store, statePath, ledgerDir string, now time.Time) (state bool, ledger int, err error) {
	mark := func(key string) (bool, error) {
		v, err := s.Get(ctx, importBucket, key)
		return v != nil, err
	}
	stamp := []byte(now.UTC().Format(time.RFC3339))
	if statePath != "" {
		done, err := mark("state:" + statePath)
		if err != nil {
			return false, 0, err
		}
		if !done {
			data, err := fileState{path: statePath}.Load(ctx)
			if err != nil {
				return false, 0, fmt.Errorf("importing the state file %s: %w", statePath, err)
			}
			if data != nil {
				cur, err := s.Get(ctx, botBucket, stateKey)
				if err != nil {
					return false, 0, err
				}
				if cur == nil {
					if err := s.Put(ctx, botBucket, stateKey, data); err != nil {
						return false, 0, err
					}
					state = true
				}
				_ = os.WriteFile(statePath+".imported.txt", fmt.Appendf(nil, importNote, s.Path(), stamp), 0o600)
			}
			if err := s.Put(ctx, importBucket, "state:"+statePath, stamp); err != nil {
				return state, 0, err
			}
		}
	}
	if ledgerDir != "" {
		done, err := mark("ledger:" + ledgerDir)
		if err != nil {
			return state, 0, err
		}
		if !done {
			ents, err := os.ReadDir(ledgerDir)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return state, 0, fmt.Errorf("importing the status ledger %s: %w", ledgerDir, err)
			}
			for _, de := range ents {
				if !de.Type().IsRegular() || !strings.HasSuffix(de.Name(), ".json") {
					continue
				}
				b, err := readSmall(filepath.Join(ledgerDir, de.Name()), queue.MaxStatusEntryBytes)
				if err != nil {
					continue
				}
				e, err := parseLedger(b)
				if err != nil {
					continue
				}
				if err := (storeLedger{s}).Put(ctx, e); err != nil {
					return state, ledger, err
				}
				ledger++
			}
			if len(ents) > 0 {
				_ = os.WriteFile(filepath.Join(ledgerDir, "IMPORTED.txt"), fmt.Appendf(nil, importNote, s.Path(), stamp), 0o600)
			}
			if err := s.Put(ctx, importBucket, "ledger:"+ledgerDir, stamp); err != nil {
				return state, ledger, err
			}
		}
	}
	return state, ledger, nil
}

// readSmall reads a regular file of at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, limit)
	}
	b := make([]byte, fi.Size())
	_, err = f.ReadAt(b, 0)
	return b, err
}

// openStore opens embedded mode's store ($ODEK_HOME/store.db), imports an
// older state file and ledger directory once, and points the bot's state
// and ledger at the store. The queue in the store survives restarts, so
// cfg.VolatileQueue is false.
func openStore(ctx context.Context, e env, cfg *bot.Config, home string, log logrus.FieldLogger) (*estore.Store, error) {
	path := filepath.Join(home, estore.DefaultFile)
	o, err := storeOptions()
	if err != nil {
		return nil, err
	}
	s, err := estore.Open(path, o)
	if err != nil {
		return nil, err
	}
	// `odek queue backup --store PATH` copies the store through this
	// socket while the bot runs.
	if err := s.ServeAdmin(); err != nil {
		log.WithError(err).Warn("odek-bot: the store's admin socket is off; odek queue backup works only while the bot is stopped")
	}
	statePath := ""
	if e.StateFile != "" {
		if statePath, err = filepath.Abs(e.StateFile); err != nil {
			s.Close()
			return nil, fmt.Errorf("ODEK_TELEGRAM_STATE_FILE: %w", err)
		}
	}
	ledgerDir := ""
	switch e.StatusLedger {
	case "off":
	case "":
		ledgerDir = filepath.Join(home, "telegram-status")
	default:
		if ledgerDir, err = filepath.Abs(e.StatusLedger); err != nil {
			s.Close()
			return nil, fmt.Errorf("ODEK_TELEGRAM_STATUS_LEDGER: %w", err)
		}
	}
	st, n, err := importOld(ctx, s, statePath, ledgerDir, time.Now())
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("odek-bot: %w", err)
	}
	if st || n > 0 {
		log.WithFields(logrus.Fields{"state_file": statePath, "ledger_entries": n, "store": path}).Info("odek-bot: imported the old state file and status ledger into the embedded store (once; the old files are no longer read)")
	}
	cfg.State = storeState{s}
	cfg.Ledger = nil
	if e.StatusLedger != "off" {
		cfg.Ledger = storeLedger{s}
	}
	cfg.VolatileQueue = false
	return s, nil
}
