package tgclient

import (
	"context"
	"net/http"
	"path"
	"strconv"
)

// Forum topics (issue 26): a chat actor that serves one topic of a forum
// puts the topic into the context of its calls (WithThread), and every
// request the client makes with that context to a method that takes
// message_thread_id carries it — the answer, the status message, drafts,
// typing, files, approval prompts — without each call site knowing about
// topics. The parameter goes into the URL's query string, which the Bot
// API reads beside the body ("parameters … in the query string,
// application/x-www-form-urlencoded, application/json or
// multipart/form-data"), so uploads carry it too. The General topic has
// no thread id to send to (WithThread(ctx, 0) is a no-op). Methods that
// address an existing message (edits, deletes, reactions) take none.

type threadKey struct{}

// WithThread returns ctx naming the forum topic thread (0 = none, the
// General topic or not a forum).
func WithThread(ctx context.Context, thread int) context.Context {
	if thread == 0 {
		return ctx
	}
	return context.WithValue(ctx, threadKey{}, thread)
}

// ThreadOf is the topic WithThread put into ctx (0 = none).
func ThreadOf(ctx context.Context) int {
	t, _ := ctx.Value(threadKey{}).(int)
	return t
}

// threadMethods are the Bot API methods that take message_thread_id.
var threadMethods = map[string]bool{
	"sendMessage": true, "sendMessageDraft": true, "sendChatAction": true, "sendDocument": true,
	"sendPhoto": true, "sendVoice": true, "sendAudio": true, "sendMediaGroup": true, "copyMessage": true,
	"forwardMessage": true, "sendSticker": true, "sendVideo": true, "sendAnimation": true,
}

// addThread puts the context's topic into req's query when its method
// takes one and the request does not name a thread itself.
func addThread(ctx context.Context, req *http.Request) {
	t := ThreadOf(ctx)
	if t == 0 || !threadMethods[path.Base(req.URL.Path)] {
		return
	}
	q := req.URL.Query()
	if q.Get("message_thread_id") != "" {
		return
	}
	q.Set("message_thread_id", strconv.Itoa(t))
	req.URL.RawQuery = q.Encode()
}
