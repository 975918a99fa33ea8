package bot

import (
	"context"
	"strconv"
	"time"

	"github.com/odekrun/odek/queue"
)

// StatusLedger remembers which "⏳ Working" status messages the bot has in
// chats, outside the process, so that a bot killed without a chance to
// clean up (SIGKILL, OOM, power loss) and without a state file can find
// them at the next start and edit them to say the job was interrupted,
// instead of leaving "⏳ Working · 1.0 s" in the chat for ever.
//
// The bot puts an entry when it sends a job's (or a held message's)
// status message and deletes it when the message is deleted or replaced
// (the answer came, /stop, a shutdown notice). At start, every entry left
// that is not a job or held message restored from Config.State is an
// orphan: its message is edited and the entry deleted. Errors are logged
// and never fail a job. The implementations live in queue
// (queue.FileStatusLedger, queue.RedisStatusLedger), so the bot holds no
// storage client of its own.
type StatusLedger interface {
	Put(ctx context.Context, e queue.StatusEntry) error
	Delete(ctx context.Context, chatID int64, msgID int) error
	List(ctx context.Context) ([]queue.StatusEntry, error)
}

func ledgerKey(chatID int64, msgID int) string {
	return strconv.FormatInt(chatID, 10) + "_" + strconv.Itoa(msgID)
}

// ledgerPutMsg records status message msg of job ("" = a held request)
// in the asker's language. It runs in the chat's actor.
func (c *chat) ledgerPutMsg(ctx context.Context, msg int, job, lang string) {
	l := c.b.cfg.Ledger
	if l == nil || msg == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	e := queue.StatusEntry{Chat: c.id, Msg: msg, Job: job, Lang: lang, Since: c.b.cfg.Now().UTC()}
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
	for k, cs := range chats {
		for _, h := range cs.Held {
			live[ledgerKey(k.chat, h.StatusMsg)] = true
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
		kind, err := b.tg.EditPlain(ctx, e.Chat, e.Msg, tr(langOf(e.Lang), key), nil)
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
