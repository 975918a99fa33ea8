package bot

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"time"

	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/bot/tgformat"
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

// useDrafts reports whether the job's answer streams as drafts: in
// private chats, unless the operator chose edits or the Bot API refused
// drafts.
func (c *chat) useDrafts(js *jobState) bool {
	b := c.b
	return b.cfg.Stream != "edit" && c.id > 0 && !b.noDrafts.Load() && !js.noDraft
}

// draft shows the answer the head job's model is writing as a
// sendMessageDraft, in private chats where the Bot API offers it and the
// chat's streaming mode is partial (streammode.go). A draft is not an
// edit of the status message: the first goes out as soon as the answer's
// first text is read — at once when the watcher sees it (watchDraft),
// before any status message — and later ones at most once per edit
// interval. A draft only ever grows (chatcore.GrowDraft): a later model
// call's text is added after the earlier one's, and past maxDraftShown
// characters it stops with "…"; it never shrinks or jumps back. Where
// drafts are refused, the job falls back to stream (the status message).
// It runs in the chat's actor, from refreshStatus and drawNow.
func (c *chat) draft(ctx context.Context, js *jobState, now time.Time) {
	b := c.b
	if c.streamMode() != chatcore.StreamPartial || !c.useDrafts(js) {
		return
	}
	next, ok := chatcore.GrowDraft(js.draftText, js.st.Streamed, js.st.StreamedCut, maxDraftShown)
	if !ok || (!js.lastDraft.IsZero() && now.Sub(js.lastDraft) < editInterval(c.id, b.cfg.ProgressInterval)) {
		return
	}
	js.lastDraft = now
	kind, err := b.tg.SendDraft(ctx, c.id, draftID(js.id), next)
	switch {
	case kind == tgOK:
		js.draftText = next
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

// stream is the head job's status text as the chat's streaming mode
// shows it in the status message: in progress mode the status line and
// the finished tool calls under it; in partial mode where drafts are not
// used (groups, a Bot API without drafts, ODEK_TELEGRAM_STREAM=edit) the
// status line and the answer being written, append-only like a draft;
// else the status line. Those edits are throttled like every status edit.
func (c *chat) stream(ctx context.Context, js *jobState, status string, now time.Time) string {
	switch c.streamMode() {
	case chatcore.StreamProgress:
		if lines := js.st.ProgressLines(); lines != "" {
			return status + "\n" + lines
		}
		return status
	case chatcore.StreamPartial:
		if c.useDrafts(js) {
			return status // drafts go out by themselves (draft)
		}
	default:
		return status
	}
	room := tgformat.MaxMessageLen - tgformat.TextLen(status) - 2
	if next, ok := chatcore.GrowDraft(js.editDraft, js.st.Streamed, js.st.StreamedCut, min(room, maxDraftShown)); ok {
		js.editDraft = next
	}
	if js.editDraft == "" || tgformat.TextLen(js.editDraft) > room {
		return status
	}
	return status + "\n\n" + js.editDraft
}

// isMethodMissing reports whether err is Telegram's answer to an unknown
// method (the whole Bot API lacks it, not just this chat).
func isMethodMissing(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "method not found")
}
