package bot

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

// StatusLedger remembers which "⏳ Working" status messages the bot has in
// chats, outside the process, so that a bot killed without a chance to
// clean up (SIGKILL, OOM, power loss) and without a state file can find
// them at the next start and edit them to say the job was interrupted,
// instead of leaving "⏳ Working · 1.0 s" in the chat for ever.
//
// The bot puts an entry when it sends a job's status message and deletes
// it when the message is deleted or replaced (the answer came, /stop, a
// shutdown notice). At start, every entry left that is not a job restored
// from Config.State is an orphan: its message is edited and the entry
// deleted. Entries hold no message text, only ids and the asker's
// language. Errors are logged and never fail a job.
type StatusLedger interface {
	Put(ctx context.Context, e LedgerEntry) error
	Delete(ctx context.Context, chatID int64, msgID int) error
	List(ctx context.Context) ([]LedgerEntry, error)
}

// LedgerEntry is one status message on screen.
type LedgerEntry struct {
	Chat  int64     `json:"chat"`
	Msg   int       `json:"msg"`
	Job   string    `json:"job,omitempty"`
	Lang  string    `json:"lang,omitempty"`
	Since time.Time `json:"since"`
}

// maxLedgerEntries bounds what List reads (a ledger never holds more than
// the status messages of unfinished jobs).
const maxLedgerEntries = 100000

// maxLedgerEntryBytes bounds one entry read back.
const maxLedgerEntryBytes = 4096

func ledgerKey(chatID int64, msgID int) string {
	return strconv.FormatInt(chatID, 10) + "_" + strconv.Itoa(msgID)
}

// parseLedgerEntry decodes an entry read back from storage; an entry that
// does not decode, or names no message, is an error. Pure.
func parseLedgerEntry(data []byte) (LedgerEntry, error) {
	var e LedgerEntry
	if len(data) > maxLedgerEntryBytes {
		return e, fmt.Errorf("bot: ledger entry of %d bytes (limit %d)", len(data), maxLedgerEntryBytes)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("bot: ledger entry is not valid JSON: %w", err)
	}
	if e.Chat == 0 || e.Msg <= 0 {
		return e, fmt.Errorf("bot: ledger entry names no message (chat %d, msg %d)", e.Chat, e.Msg)
	}
	e.Lang = langOf(e.Lang)
	return e, nil
}

// FileLedger is a StatusLedger in a directory, one small file per status
// message (<chat>_<msg>.json), written atomically (temporary file and
// rename), so a crash leaves whole entries. odek-bot's default in
// embedded mode: $ODEK_HOME/telegram-status.
type FileLedger struct{ Dir string }

func (f FileLedger) Put(_ context.Context, e LedgerEntry) error {
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
	return os.Rename(tmp.Name(), filepath.Join(f.Dir, ledgerKey(e.Chat, e.Msg)+".json"))
}

func (f FileLedger) Delete(_ context.Context, chatID int64, msgID int) error {
	err := os.Remove(filepath.Join(f.Dir, ledgerKey(chatID, msgID)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (f FileLedger) List(_ context.Context) ([]LedgerEntry, error) {
	des, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []LedgerEntry
	var errs []error
	for _, de := range des {
		if len(out) >= maxLedgerEntries {
			break
		}
		if !de.Type().IsRegular() || !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		p := filepath.Join(f.Dir, de.Name())
		data, err := readAtMost(p, maxLedgerEntryBytes)
		if err == nil {
			var e LedgerEntry
			if e, err = parseLedgerEntry(data); err == nil {
				out = append(out, e)
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", de.Name(), err))
		os.Remove(p) // unreadable: it can never be cleaned, so it goes
	}
	return out, errors.Join(errs...)
}

// RedisLedger is a StatusLedger in one Redis hash (field <chat>_<msg>,
// value the entry's JSON). odek-bot's default in distributed mode, under
// the queue's key prefix: <prefix>telegram:status-ledger.
type RedisLedger struct {
	Client redis.UniversalClient
	Key    string
}

func (r RedisLedger) Put(ctx context.Context, e LedgerEntry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return r.Client.HSet(ctx, r.Key, ledgerKey(e.Chat, e.Msg), data).Err()
}

func (r RedisLedger) Delete(ctx context.Context, chatID int64, msgID int) error {
	return r.Client.HDel(ctx, r.Key, ledgerKey(chatID, msgID)).Err()
}

func (r RedisLedger) List(ctx context.Context) ([]LedgerEntry, error) {
	var out []LedgerEntry
	var errs []error
	var cursor uint64
	for {
		kv, next, err := r.Client.HScan(ctx, r.Key, cursor, "*", 512).Result()
		if err != nil {
			return out, err
		}
		for i := 0; i+1 < len(kv) && len(out) < maxLedgerEntries; i += 2 {
			e, err := parseLedgerEntry([]byte(kv[i+1]))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", kv[i], err))
				r.Client.HDel(ctx, r.Key, kv[i])
				continue
			}
			out = append(out, e)
		}
		if cursor = next; cursor == 0 || len(out) >= maxLedgerEntries {
			return out, errors.Join(errs...)
		}
	}
}

// ledgerPut records a job's status message. It runs in the chat's actor.
func (c *chat) ledgerPut(ctx context.Context, js *jobState) {
	c.ledgerPutMsg(ctx, js.statusMsg, js.id, js.lang)
}

// ledgerPutMsg records status message msg of job (""= a held request).
func (c *chat) ledgerPutMsg(ctx context.Context, msg int, job, lang string) {
	l := c.b.cfg.Ledger
	if l == nil || msg == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	e := LedgerEntry{Chat: c.id, Msg: msg, Job: job, Lang: lang, Since: c.b.cfg.Now().UTC()}
	if err := l.Put(lctx, e); err != nil {
		c.b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: recording a status message in the ledger failed; a crash would leave it behind")
	}
}

// ledgerDel forgets a status message that is gone or replaced. It runs in
// the chat's actor.
func (c *chat) ledgerDel(ctx context.Context, msgID int) {
	l := c.b.cfg.Ledger
	if l == nil || msgID == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.Delete(lctx, c.id, msgID); err != nil {
		c.b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: removing a status message from the ledger failed")
	}
}

// cleanOrphans edits the status messages a previous process left behind
// (ledger entries of no restored job) to say the job was interrupted, and
// forgets them. It runs at start, before any update is handled.
func (b *Bot) cleanOrphans(ctx context.Context) {
	l := b.cfg.Ledger
	if l == nil {
		return
	}
	entries, err := l.List(ctx)
	if err != nil {
		b.log.WithError(err).Warn("bot: reading the status ledger failed in part")
	}
	if len(entries) == 0 {
		return
	}
	chats, jobs := b.serial.snapshots() // the jobs and held requests restored from Config.State
	live := map[string]bool{}
	for id, cs := range chats {
		for _, h := range cs.Held {
			live[ledgerKey(id, h.StatusMsg)] = true
		}
	}
	for _, j := range jobs {
		if j.StatusMsg != 0 {
			live[ledgerKey(j.Chat, j.StatusMsg)] = true
		}
	}
	key := "orphan"
	if b.cfg.VolatileQueue {
		key = "orphan.lost"
	}
	cleaned := 0
	for _, e := range entries {
		if live[ledgerKey(e.Chat, e.Msg)] {
			continue // a restored job: its answer replaces the status as usual
		}
		kind, err := b.tg.EditPlain(ctx, e.Chat, e.Msg, tr(e.Lang, key), nil)
		switch kind {
		case tgOK, tgMessageGone, tgChatGone, tgNotModified, tgPermanent, tgBadEntities:
			cleaned++
			if derr := l.Delete(ctx, e.Chat, e.Msg); derr != nil {
				b.log.WithError(derr).Warn("bot: removing a cleaned status message from the ledger failed")
			}
		default:
			b.log.WithError(err).WithField("chat_id", e.Chat).Warn("bot: editing an orphaned status message failed; trying again at the next start")
		}
	}
	if cleaned > 0 {
		b.log.WithField("messages", cleaned).Warn("bot: status messages left by a previous process that stopped without cleaning up were marked as interrupted")
	}
}
