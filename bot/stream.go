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

// draft shows the answer the head job's model is writing as a
// sendMessageDraft, in private chats where the Bot API offers it. A draft
// is not an edit of the status message: it goes out as soon as the
// answer's first text is read (issue 26 point 8: it waited for the
// delayed status message and the edit interval after it, about 3.4 s),
// before any status message, and then at most once per edit interval of
// its own. Where drafts are refused, the job falls back to stream (the
// status message). It runs in the chat's actor, from refreshStatus.
func (c *chat) draft(ctx context.Context, js *jobState, now time.Time) {
	b := c.b
	if b.cfg.Stream == "off" || js.st.Draft == "" || !c.useDrafts(js) {
		return
	}
	if js.st.DraftLen == js.draftShown || (!js.lastDraft.IsZero() && now.Sub(js.lastDraft) < editInterval(c.id, b.cfg.ProgressInterval)) {
		return
	}
	js.lastDraft = now
	kind, err := b.tg.SendDraft(ctx, c.id, draftID(js.id), tail(js.st.Draft, maxDraftShown))
	switch {
	case kind == tgOK:
		js.draftShown = js.st.DraftLen
	case errors.Is(err, tgclient.ErrNoDrafts):
		b.log.WithError(err).WithField("chat_id", c.id).Info("bot: sendMessageDraft is not available; answers stream by editing the status message")
		js.noDraft = true
		if isMethodMissing(err) {
			b.noDrafts.Store(true)
		}
	default:
		c.checkSend(ctx, kind, err)
	}
}

// stream appends the answer the head job's model is writing to its status
// message where drafts are not used (groups, a Bot API without drafts,
// ODEK_TELEGRAM_STREAM=edit); those edits are throttled like every status
// edit. It returns the status text to show.
func (c *chat) stream(ctx context.Context, js *jobState, status string, now time.Time) string {
	b := c.b
	if b.cfg.Stream == "off" || js.st.Draft == "" || c.useDrafts(js) {
		return status // drafts go out by themselves (draft)
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
