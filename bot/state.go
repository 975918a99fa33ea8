package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/odekrun/odek/bot/chatcore"
	"slices"
	"sync"
	"time"

	"github.com/odekrun/odek/queue"
)

// StateStore keeps the bot's chat state across restarts: each chat's
// session choice, today's usage, artifact ids and the unfinished jobs with
// who sent them. The bot saves a snapshot (JSON, at most a few hundred
// bytes per chat) when it changed, at most every StateInterval, and once
// when Run ends; it loads it once at the start of Run. Save must replace
// the previous snapshot atomically.
type StateStore interface {
	Load(ctx context.Context) ([]byte, error) // nil, nil when there is none yet
	Save(ctx context.Context, snapshot []byte) error
}

// stateVersion is the snapshot format; a snapshot of another version is
// ignored (logged), never half-read.
const stateVersion = 1

type snapshot struct {
	Version int                 `json:"version"`
	Chats   map[string]chatSnap `json:"chats"`
	Jobs    map[string]jobSnap  `json:"jobs"`
}

type chatSnap struct {
	Queue   []string  `json:"queue,omitempty"`
	Session string    `json:"session,omitempty"`
	Day     string    `json:"day,omitempty"`
	Tokens  int64     `json:"tokens,omitempty"`
	Prompt  int64     `json:"prompt_tokens,omitempty"`
	Cached  int64     `json:"cached_tokens,omitempty"`
	CostUSD float64   `json:"cost_usd,omitempty"`
	Jobs    int       `json:"jobs,omitempty"`
	Warned  bool      `json:"warned,omitempty"`
	Arts    []artSnap `json:"artifacts,omitempty"`
	NextArt int       `json:"next_artifact,omitempty"`
	// History is the usage of earlier days (added after version 1 files
	// were written; absent = none).
	History []chatcore.DayTotal `json:"history,omitempty"`
	// Model is the model chosen with /model (absent = the default).
	Model string `json:"model,omitempty"`
	// Held are the messages waiting behind the chat's unfinished jobs
	// (absent = none).
	Held []heldSnap `json:"held,omitempty"`
	// Context is how full the conversation is (absent = unknown).
	Context *gaugeSnap `json:"context,omitempty"`
	// Busy is the policy chosen with /busy (absent = the operator's).
	Busy string `json:"busy,omitempty"`
	// Stream is the mode chosen with /stream (absent = the operator's).
	Stream string `json:"stream,omitempty"`
	// Chatter is the group messages kept for the next addressed turn
	// (groupctx.go; absent = none).
	Chatter []chatterLine `json:"chatter,omitempty"`
	// Voice is the mode chosen with /voice (absent = the operator's).
	Voice string `json:"voice,omitempty"`
}

// gaugeSnap is a chat's gauge in the state file.
type gaugeSnap struct {
	Session     string    `json:"session"`
	Model       string    `json:"model,omitempty"`
	Tokens      int64     `json:"tokens,omitempty"`
	At          time.Time `json:"at,omitzero"`
	CompactedAt time.Time `json:"compacted_at,omitzero"`
	Before      int64     `json:"before,omitempty"`
	After       int64     `json:"after,omitempty"`
}

// heldSnap is a held request (heldRequest) in the state file.
type heldSnap struct {
	Update    int      `json:"update"`
	User      int64    `json:"user,omitempty"`
	UserName  string   `json:"user_name,omitempty"`
	Text      string   `json:"text"`
	Files     []string `json:"files,omitempty"`
	Uploads   []string `json:"uploads,omitempty"`
	Images    []string `json:"images,omitempty"`
	Group     bool     `json:"group,omitempty"`
	SrcMsg    int      `json:"src_msg,omitempty"`
	ReplyTo   int      `json:"reply_to,omitempty"`
	Lang      string   `json:"lang,omitempty"`
	StatusMsg int      `json:"status_msg,omitempty"`
}

func (h heldRequest) snap() heldSnap {
	r := h.req
	return heldSnap{Update: r.updateID, User: r.userID, UserName: r.userName, Text: r.text, Files: slices.Clone(r.files),
		Uploads: slices.Clone(r.uploads), Images: slices.Clone(r.images), Group: r.group, SrcMsg: r.srcMsg, ReplyTo: r.replyTo,
		Lang: h.lang, StatusMsg: h.statusMsg}
}

func (s heldSnap) request(chatID int64) heldRequest {
	return heldRequest{req: jobRequest{updateID: s.Update, chatID: chatID, userID: s.User, userName: s.UserName, text: s.Text,
		files: s.Files, uploads: s.Uploads, images: s.Images, group: s.Group, srcMsg: s.SrcMsg, replyTo: s.ReplyTo},
		lang: langOf(s.Lang), statusMsg: s.StatusMsg}
}

type artSnap struct {
	ID   string             `json:"id"`
	Meta queue.ArtifactMeta `json:"meta"`
}

type jobSnap struct {
	Chat      int64     `json:"chat"`
	User      int64     `json:"user,omitempty"`
	UserName  string    `json:"user_name,omitempty"`
	StatusMsg int       `json:"status_msg,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Reserved is the job's share of the chat's daily budget (its cap).
	Reserved int64 `json:"reserved,omitempty"`
	// Session is the conversation the job continues.
	Session string `json:"session,omitempty"`
	// Topic is the forum topic the job belongs to (absent = none).
	Topic int `json:"topic,omitempty"`
}

// snapshot encodes what the chat actors last published.
func (b *Bot) snapshot() ([]byte, error) {
	chats, jobs := b.serial.snapshots()
	s := snapshot{Version: stateVersion, Chats: map[string]chatSnap{}, Jobs: jobs}
	for k, cs := range chats {
		s.Chats[k.String()] = cs
	}
	return json.Marshal(s)
}

// restore replaces the chat state with a snapshot. It runs before any chat
// actor does: an unreadable snapshot is an error and changes nothing.
func (b *Bot) restore(data []byte) error {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("bot: state snapshot is not valid JSON: %w", err)
	}
	if s.Version != stateVersion {
		return fmt.Errorf("bot: state snapshot version %d, this bot reads %d", s.Version, stateVersion)
	}
	chats := map[actorKey]*chat{}
	for key, cs := range s.Chats {
		k, err := parseActorKey(key)
		if err != nil {
			return err
		}
		id := k.chat
		c := b.newChat(k)
		c.chatState = chatState{queue: cs.Queue, session: cs.Session, nextArt: cs.NextArt, model: cs.Model, busy: chatcore.Busy(cs.Busy), streaming: chatcore.Stream(cs.Stream), chatter: cs.Chatter, voice: cs.Voice,
			books: chatcore.Books{Hist: cs.History,
				Use: chatcore.Usage{Day: cs.Day, Tokens: cs.Tokens, Prompt: cs.Prompt, Cached: cs.Cached, CostUSD: cs.CostUSD, Jobs: cs.Jobs, Warned: cs.Warned}}}
		if g := cs.Context; g != nil {
			c.books.Gauge = chatcore.Gauge{Session: g.Session, Model: g.Model, Tokens: g.Tokens, At: g.At, CompactedAt: g.CompactedAt, Before: g.Before, After: g.After}
		}
		for _, a := range cs.Arts {
			c.arts = append(c.arts, chatArtifact{id: a.ID, meta: a.Meta})
		}
		for _, h := range cs.Held {
			c.held = append(c.held, h.request(id))
		}
		chats[k] = c
	}
	for id, j := range s.Jobs {
		js := &jobState{id: id, chatID: j.Chat, userID: j.User, userName: j.UserName, statusMsg: j.StatusMsg, startedAt: j.StartedAt, session: j.Session}
		js.st.Started = !j.StartedAt.IsZero()
		k := actorKey{chat: j.Chat, topic: j.Topic}
		b.topics.set(id, j.Topic)
		c := chats[k]
		if c == nil {
			c = b.newChat(k)
			chats[k] = c
		}
		c.jobs[id] = js
		c.books.Started(id, chatcore.Admission{Reserve: j.Reserved})
	}
	for _, c := range chats {
		b.serial.put(c, b.publish(c))
	}
	return nil
}

// loadState restores the saved state, if any. A snapshot that cannot be
// read is logged and ignored: the bot starts with empty state rather than
// not at all.
func (b *Bot) loadState(ctx context.Context) {
	if b.cfg.State == nil {
		return
	}
	data, err := b.cfg.State.Load(ctx)
	if err == nil && len(data) > 0 {
		err = b.restore(data)
	}
	if err != nil {
		b.log.WithError(err).Error("bot: could not restore the saved chat state; starting empty")
		return
	}
	b.lastSaved = data
	if n := len(b.serial.keys(false)); n > 0 {
		b.log.WithField("chats", n).Info("bot: chat state restored")
	}
}

// saveState writes a snapshot if it changed since the last save.
func (b *Bot) saveState(ctx context.Context) {
	data, err := b.snapshot()
	same := err == nil && bytes.Equal(data, b.lastSaved)
	if err != nil {
		b.log.WithError(err).Error("bot: encoding the chat state failed")
		return
	}
	if same {
		return
	}
	if err := b.cfg.State.Save(ctx, data); err != nil {
		b.log.WithError(err).Warn("bot: saving the chat state failed; retrying later")
		return
	}
	b.lastSaved = data
}

// stateLoop saves the state every StateInterval and once more when ctx
// ends (after the other loops stopped, see Run).
func (b *Bot) stateLoop(ctx context.Context) error {
	t := time.NewTicker(b.cfg.StateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			b.saveState(ctx)
		}
	}
}

// The notice "lost" tells a chat that its request died with the previous
// process (VolatileQueue).

// dropLostJobs forgets the restored unfinished jobs when the queue did not
// survive the restart (Config.VolatileQueue), removes their status
// messages and tells each chat once.
func (b *Bot) dropLostJobs(ctx context.Context) {
	if !b.cfg.VolatileQueue {
		return
	}
	var mu sync.Mutex
	told := 0
	b.serial.all(func(c *chat) {
		had := len(c.queue) > 0
		c.queue = nil
		lang := "en"
		for _, j := range c.jobs {
			if j.userID != 0 {
				lang = b.lang(j.userID)
			}
			if j.statusMsg != 0 {
				_, _ = b.tg.Remove(ctx, c.id, j.statusMsg)
				c.ledgerDel(ctx, j.statusMsg)
			}
		}
		for id := range c.jobs {
			c.books.Ended(id)
		}
		clear(c.jobs)
		if had {
			c.reply(ctx, tr(lang, "lost"))
			mu.Lock()
			told++
			mu.Unlock()
		}
	})
	if told > 0 {
		b.log.WithField("chats", told).Warn("bot: unfinished jobs of the previous process were lost with its in-memory queue; their chats were told")
	}
}

// Notices edited into the status messages of unfinished jobs when the bot
// stops, so no "⏳ Working" stays behind (texts "resume" and "interrupt",
// in each job's asker's language).
var (
	resumeNotice    = tr("en", "resume")
	interruptNotice = tr("en", "interrupt")
)

// notifyShutdown tells each chat with an unfinished job, when the bot
// stops, what becomes of it: in distributed mode the job goes on and its
// answer comes after the restart; in embedded mode it is lost, the chat is
// told to resend it, and the job is forgotten (so the restart does not
// tell the chat twice). The job's status message is edited when it has
// one; a chat without one gets a message.
func (b *Bot) notifyShutdown(ctx context.Context) {
	key := "resume"
	if b.cfg.VolatileQueue {
		key = "interrupt"
	}
	var mu sync.Mutex
	n := 0
	b.serial.all(func(c *chat) {
		var msgs []int
		lang := "en"
		for _, id := range c.queue {
			if js := c.jobs[id]; js != nil && !js.stopped {
				msgs = append(msgs, js.statusMsg)
				if js.userID != 0 {
					lang = b.lang(js.userID)
				}
			}
		}
		text := tr(lang, key)
		if b.cfg.VolatileQueue {
			for _, id := range c.queue {
				delete(c.jobs, id)
				c.books.Ended(id)
			}
			c.queue = nil
		}
		if b.cfg.State == nil {
			// Held requests live only in this process: they are lost.
			for _, h := range c.held {
				if h.statusMsg != 0 {
					if kind, _ := b.tg.EditPlain(ctx, c.id, h.statusMsg, tr(h.lang, "interrupt"), nil); kind == tgOK {
						c.ledgerDel(ctx, h.statusMsg)
					}
				}
			}
			c.held = nil
		}
		told := false
		for _, msg := range msgs {
			if msg != 0 {
				if kind, _ := b.tg.EditPlain(ctx, c.id, msg, text, nil); kind == tgOK {
					c.ledgerDel(ctx, msg) // the notice replaced "Working": nothing to clean after a restart
					told = true
					continue
				}
			}
			if !told {
				told = true
				c.reply(ctx, text)
			}
		}
		mu.Lock()
		n += len(msgs)
		mu.Unlock()
	})
	if n > 0 {
		b.log.WithField("jobs", n).Info("bot: told the chats of unfinished jobs that the bot stops")
	}
}

// Settle waits until every result the queue holds for this bot has been
// delivered: a read of the results found none and nothing is being
// delivered. Embedded mode calls it after its workers stopped, so answers
// finished during shutdown reach their chats before the bot stops.
func (b *Bot) Settle(ctx context.Context) {
	ch := b.delivery.wait()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
