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

type batchKey struct{ chatID, userID int64 }

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
// serial queue.
func (b *Bot) submit(ctx context.Context, r jobRequest, mediaGroup string, long bool) {
	key := batchKey{r.chatID, r.userID}
	b.mu.Lock()
	bt := b.batches[key]
	if bt != nil && (mediaGroup == bt.group || bt.group == "" && mediaGroup == "") {
		if t := strings.TrimSpace(r.text); t != "" {
			if strings.TrimSpace(bt.req.text) != "" {
				bt.req.text += "\n\n"
			}
			bt.req.text += r.text
		}
		bt.req.files = append(bt.req.files, r.files...)
		bt.req.uploads = append(bt.req.uploads, r.uploads...)
		bt.timer.Reset(batchWindow)
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	if bt != nil {
		b.flushBatch(ctx, key) // a different album or kind: the old batch goes first
	}
	if mediaGroup == "" && !long {
		b.startJob(ctx, r)
		return
	}
	bt = &batch{req: r, group: mediaGroup}
	b.mu.Lock()
	b.batches[key] = bt
	bt.timer = time.AfterFunc(batchWindow, func() {
		b.serial.Do(r.chatID, func() { b.flushBatch(ctx, key) })
	})
	b.mu.Unlock()
}

// flushBatch starts the job of a waiting batch. It runs in the chat's
// serial queue.
func (b *Bot) flushBatch(ctx context.Context, key batchKey) {
	b.mu.Lock()
	bt := b.batches[key]
	delete(b.batches, key)
	b.mu.Unlock()
	if bt == nil {
		return
	}
	bt.timer.Stop()
	b.startJob(ctx, bt.req)
}

// flushBatches starts every waiting batch at shutdown: Telegram counts
// their updates as delivered, so they are enqueued, not dropped.
func (b *Bot) flushBatches(ctx context.Context) {
	b.mu.Lock()
	var keys []batchKey
	for k := range b.batches {
		keys = append(keys, k)
	}
	b.mu.Unlock()
	for _, k := range keys {
		b.serial.Do(k.chatID, func() { b.flushBatch(ctx, k) })
	}
}
