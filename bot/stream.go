package bot

import (
	"context"
	"errors"
	"github.com/odekrun/odek/bot/tgformat"
	"hash/fnv"
	"strings"
	"time"

	"github.com/odekrun/odek/bot/tgclient"
)

// maxDraftShown is how much of the answer being written a draft or the
// status message shows: its last characters, within Telegram's 4096.
const maxDraftShown = 3500

// draftID is the job's sendMessageDraft id: stable per job (so Telegram
// animates the changes), positive and non-zero.
func draftID(jobID string) int64 {
	h := fnv.New64a()
	h.Write([]byte(jobID))
	return int64(h.Sum64()>>1) | 1
}

// tail is the last max characters of s, after "…" when cut. Pure.
func tail(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return "…" + string(r[len(r)-max+1:])
}

// useDrafts reports whether the job's answer streams as drafts.
func (c *chat) useDrafts(js *jobState) bool {
	b := c.b
	return (b.cfg.Stream == "" || b.cfg.Stream == "auto") && c.id > 0 && !b.noDrafts.Load() && !js.noDraft
}

// stream shows the answer the head job's model is writing: as a
// sendMessageDraft in private chats where the Bot API offers it (the
// status message keeps its status line), else appended to the status
// message, whose edits are throttled like every status edit. It returns
// the status text to show. It runs in the chat's actor, from
// refreshStatus, so drafts are throttled to the chat's edit interval too.
func (c *chat) stream(ctx context.Context, js *jobState, status string, now time.Time) string {
	b := c.b
	if b.cfg.Stream == "off" || js.st.Draft == "" {
		return status
	}
	if c.useDrafts(js) {
		if js.st.DraftLen == js.draftShown || now.Sub(js.lastDraft) < editInterval(c.id, b.cfg.ProgressInterval) {
			return status
		}
		js.lastDraft = now
		kind, err := b.tg.SendDraft(ctx, c.id, draftID(js.id), tail(js.st.Draft, maxDraftShown))
		switch {
		case kind == tgOK:
			js.draftShown = js.st.DraftLen
			return status
		case errors.Is(err, tgclient.ErrNoDrafts):
			b.log.WithError(err).WithField("chat_id", c.id).Info("bot: sendMessageDraft is not available; answers stream by editing the status message")
			js.noDraft = true
			if isMethodMissing(err) {
				b.noDrafts.Store(true)
			}
		default:
			c.checkSend(ctx, kind, err)
			return status
		}
	}
	room := tgformat.MaxMessageLen - tgformat.TextLen(status) - 2
	if room < 100 {
		return status
	}
	return status + "\n\n" + tail(js.st.Draft, min(room, maxDraftShown))
}

// isMethodMissing reports whether err is Telegram's answer to an unknown
// method (the whole Bot API lacks it, not just this chat).
func isMethodMissing(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "method not found")
}
