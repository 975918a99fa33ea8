package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/queue"
)

// Forum topics (issue 26, point 2). In a supergroup with topics, each
// topic is a conversation of its own: its own chat actor (so its own
// session, /model, busy policy, queue and usage line), its own queue lane
// (queue.Job.Lane, so topics' jobs run in parallel like different chats'),
// and everything the actor sends carries the topic's message_thread_id
// (tgclient.WithThread). The General topic (no thread id) is the chat's
// main conversation, as the chat was before topics. A topic is told apart
// only by is_topic_message: in a supergroup without topics a reply also
// carries a message_thread_id (the reply thread), which is not a topic.
//
// go-telegram-bot-api's types predate topics, so the thread of each update
// is read from the raw update beside them (threadsOf).

// actorKey names a conversation: a chat, and a topic of it (0 = the
// chat's main conversation: private chats, groups, a forum's General).
type actorKey struct {
	chat  int64
	topic int
}

// chatKey is a chat's main conversation.
func chatKey(id int64) actorKey { return actorKey{chat: id} }

func (k actorKey) String() string {
	if k.topic == 0 {
		return strconv.FormatInt(k.chat, 10)
	}
	return strconv.FormatInt(k.chat, 10) + "/" + strconv.Itoa(k.topic)
}

// parseActorKey reads String's form back.
func parseActorKey(s string) (actorKey, error) {
	c, t, hasTopic := strings.Cut(s, "/")
	id, err := strconv.ParseInt(c, 10, 64)
	if err != nil {
		return actorKey{}, fmt.Errorf("bot: state snapshot has chat id %q", clipStr(s, 32))
	}
	k := actorKey{chat: id}
	if hasTopic {
		if k.topic, err = strconv.Atoi(t); err != nil || k.topic <= 0 {
			return actorKey{}, fmt.Errorf("bot: state snapshot has topic %q", clipStr(s, 32))
		}
	}
	return k, nil
}

func (c *chat) key() actorKey { return actorKey{chat: c.id, topic: c.topic} }

// inTopic is ctx naming the actor's topic for every Bot API call made with
// it (a no-op outside topics).
func (c *chat) inTopic(ctx context.Context) context.Context { return tgclient.WithThread(ctx, c.topic) }

// lane is the queue lane of the actor's jobs ("" = the chat's main lane).
func (c *chat) lane() string {
	if c.topic == 0 {
		return ""
	}
	return "t" + strconv.Itoa(c.topic)
}

// topicSession is the session name of base in the actor's topic.
func (c *chat) topicSession(base string) string {
	if c.topic == 0 {
		return base
	}
	return base + ":t" + strconv.Itoa(c.topic)
}

// threadInfo is what an update says about forum topics.
type threadInfo struct {
	UpdateID int        `json:"update_id"`
	Message  *threadMsg `json:"message"`
	Edited   *threadMsg `json:"edited_message"`
	Callback *struct {
		Message *threadMsg `json:"message"`
	} `json:"callback_query"`
}

type threadMsg struct {
	ThreadID int  `json:"message_thread_id"`
	IsTopic  bool `json:"is_topic_message"`
	Chat     struct {
		IsForum bool `json:"is_forum"`
	} `json:"chat"`
}

// topic is the forum topic of a message (0 = none or General).
func (m *threadMsg) topic() int {
	if m == nil || !m.IsTopic || !m.Chat.IsForum || m.ThreadID <= 0 {
		return 0
	}
	return m.ThreadID
}

// topicOf is the forum topic of one raw update (0 = none).
func (t threadInfo) topic() int {
	switch {
	case t.Message != nil:
		return t.Message.topic()
	case t.Edited != nil:
		return t.Edited.topic()
	case t.Callback != nil:
		return t.Callback.Message.topic()
	}
	return 0
}

// threadsOf reads the topics of a getUpdates result (an array of
// updates) by update id; an update it cannot read has none.
func threadsOf(raw json.RawMessage) map[int]int {
	var ts []threadInfo
	if json.Unmarshal(raw, &ts) != nil {
		return nil
	}
	var out map[int]int
	for _, t := range ts {
		if tp := t.topic(); tp != 0 {
			if out == nil {
				out = map[int]int{}
			}
			out[t.UpdateID] = tp
		}
	}
	return out
}

// threadOfUpdate reads the topic of one raw update (webhook).
func threadOfUpdate(raw []byte) int {
	var t threadInfo
	if json.Unmarshal(raw, &t) != nil {
		return 0
	}
	return t.topic()
}

// jobTopics maps the bot's unfinished jobs to their topic, so a result or
// an approval (which name only the chat) reaches the topic's actor. Jobs
// of a chat's main conversation are not in it.
type jobTopics struct {
	mu sync.Mutex
	m  map[string]int
}

func (t *jobTopics) set(jobID string, topic int) {
	if topic == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.m[jobID] = topic
}

func (t *jobTopics) get(jobID string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[jobID]
}

func (t *jobTopics) drop(jobID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, jobID)
}

// jobKey is the conversation a job of chatID belongs to.
func (b *Bot) jobKey(chatID int64, jobID string) actorKey {
	return actorKey{chat: chatID, topic: b.topics.get(jobID)}
}

// chatDays is what each conversation of a forum spends of its chat's day
// and reserves, published by the conversation's actor after every step,
// so that a topic's admission counts the chat's other topics
// (chatcore.Beside): the daily budget is the chat's, not each topic's.
// Only chats with topics have entries. Safe for concurrent use.
type chatDays struct {
	mu sync.Mutex
	m  map[int64]map[int]convDay
}

type convDay struct {
	day            string
	used, reserved int64
}

// put records c's books (a conversation of a forum: a topic, or the main
// conversation of a chat that has topics).
func (d *chatDays) put(c *chat) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.topic == 0 && d.m[c.id] == nil {
		return // no topics in this chat: nothing to share
	}
	if d.m == nil {
		d.m = map[int64]map[int]convDay{}
	}
	if d.m[c.id] == nil {
		d.m[c.id] = map[int]convDay{}
	}
	d.m[c.id][c.topic] = convDay{day: c.books.Use.Day, used: c.books.Use.Tokens, reserved: c.books.Reserve()}
}

// beside is what the chat's other conversations spent today and reserve.
func (c *chat) beside() chatcore.Beside {
	d := &c.b.days
	today := chatcore.UTCDay(c.b.cfg.Now())
	d.mu.Lock()
	defer d.mu.Unlock()
	var o chatcore.Beside
	for topic, cd := range d.m[c.id] {
		if topic == c.topic {
			continue
		}
		if cd.day == today {
			o.Used += cd.used
		}
		o.Reserved += cd.reserved
	}
	return o
}

// routeJob names a topic's job before it is enqueued and records its topic,
// so that its result — which may come before Enqueue returns — reaches
// the topic's actor. The returned function settles the record once
// Enqueue answered: kept under the stored id (a redelivered update's
// earlier job), dropped when the enqueue failed.
func (c *chat) routeJob(job *queue.Job) func(stored string, err error) {
	if c.topic == 0 {
		return func(string, error) {}
	}
	if job.ID == "" {
		var r [16]byte
		_, _ = rand.Read(r[:])
		job.ID = hex.EncodeToString(r[:])
	}
	id, t := job.ID, &c.b.topics
	t.set(id, c.topic)
	return func(stored string, err error) {
		switch {
		case err != nil:
			t.drop(id)
		case stored != id:
			t.set(stored, c.topic)
			t.drop(id)
		}
	}
}
