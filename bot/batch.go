package bot

import (
	"context"
	"strings"
	"time"
)

// splitPasteLen is the text length from which a message may be the first
// part of a paste Telegram split into several messages (it splits at 4096
// UTF-16 units): such a message waits batchWindow for its continuation.
const splitPasteLen = 3500

// batchWindow is how long a split paste or an album waits for its next
// part; every part restarts the wait.
const batchWindow = time.Second

// batch is one job being assembled from several messages: the parts of a
// split paste or the items of an album.
type batch struct {
	req   jobRequest
	group string // media_group_id of an album, "" for a paste
	timer *time.Timer
}

// submit starts the job of r, or holds it as the start of a batch: an
// album item (mediaGroup set) or a long text that may continue. A message
// of the same user and chat that arrives while a batch waits joins it
// (a later album or a command flushes it first). It runs in the chat's
// actor.
func (c *chat) submit(ctx context.Context, r jobRequest, mediaGroup string, long bool) {
	bt := c.batches[r.userID]
	if bt != nil && (mediaGroup == bt.group || bt.group == "" && mediaGroup == "") {
		if t := strings.TrimSpace(r.text); t != "" {
			if strings.TrimSpace(bt.req.text) != "" {
				bt.req.text += "\n\n"
			}
			bt.req.text += r.text
		}
		bt.req.files = append(bt.req.files, r.files...)
		bt.req.uploads = append(bt.req.uploads, r.uploads...)
		bt.req.images = append(bt.req.images, r.images...)
		bt.timer.Reset(batchWindow)
		return
	}
	if bt != nil {
		c.flushBatch(ctx, r.userID) // a different album or kind: the old batch goes first
	}
	if mediaGroup == "" && !long {
		c.startJob(ctx, r)
		return
	}
	bt = &batch{req: r, group: mediaGroup}
	c.batches[r.userID] = bt
	b, user, key := c.b, r.userID, c.key()
	bt.timer = time.AfterFunc(batchWindow, func() {
		b.serial.Do(key, func(c *chat) {
			if c.batches[user] == bt {
				c.flushBatch(ctx, user)
			}
		})
	})
}

// flushBatch starts the job of the user's waiting batch. It runs in the
// chat's actor.
func (c *chat) flushBatch(ctx context.Context, userID int64) {
	bt := c.batches[userID]
	delete(c.batches, userID)
	if bt == nil {
		return
	}
	bt.timer.Stop()
	c.startJob(ctx, bt.req)
}

// flushBatches starts every waiting batch at shutdown: Telegram counts
// their updates as delivered, so they are enqueued, not dropped.
func (b *Bot) flushBatches(ctx context.Context) {
	b.serial.all(func(c *chat) {
		for user := range c.batches {
			c.flushBatch(ctx, user)
		}
	})
}
