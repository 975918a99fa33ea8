package queue

import (
	"context"
	"strconv"
)

// ChatBusy is implemented by queues that can tell whether a chat has
// unfinished jobs (queued or running). The schedule runner uses it to
// skip a quiet check-in while its chat is busy (package schedule).
type ChatBusy interface {
	ChatBusy(ctx context.Context, chatID int64) (bool, error)
}

// ChatBusy implements ChatBusy: the chat's list of unfinished jobs
// (<P>chat:<id>, one entry per job until it finishes) is not empty. That
// is the chat's main lane: jobs of a forum topic (Job.Lane) run in lanes
// of their own and do not make the chat busy.
func (r *Redis) ChatBusy(ctx context.Context, chatID int64) (bool, error) {
	n, err := r.c.LLen(ctx, r.key("chat:", strconv.FormatInt(chatID, 10))).Result()
	return n > 0, err
}

// ChatBusy implements ChatBusy.
func (m *Memory) ChatBusy(ctx context.Context, chatID int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.chats[LaneKey(chatID, "")]) > 0, nil
}
