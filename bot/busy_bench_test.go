package bot

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// BenchmarkReceiptWith100ChatsActive measures issue 26's first figure:
// the time from a user's message to its first visible sign, with 100
// chats whose jobs are running. Each chat has a job that never ends; then
// every chat sends a second message at once, and the time from the update
// being offered to the bot to the "📥 Queued" status message reaching the
// fake Bot API is measured per chat (queue policy, in-memory queue, fake
// API on loopback). Reported: p50 and p99 in ms.
//
//	go test -run XXX -bench ReceiptWith100ChatsActive -benchtime 3x ./bot/
func BenchmarkReceiptWith100ChatsActive(b *testing.B) {
	const chats = 100
	var all []time.Duration
	for range b.N {
		q := queue.NewMemory(queue.Options{})
		tg, stop := startBenchBot(b, q)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { // claims the first jobs and holds them: the chats stay busy
			for ctx.Err() == nil {
				if _, err := q.Claim(ctx, "holder", 64, 50*time.Millisecond); err != nil {
					return
				}
			}
		}()
		for c := int64(1); c <= chats; c++ {
			tg.UserMessage(c, c, "first")
		}
		tg.WaitCalls(b, 30*time.Second, func(cs []bottest.Call) bool { return len(cs) >= chats }, "sendMessage")
		sent := map[string]time.Time{}
		for c := int64(1); c <= chats; c++ {
			sent[strconv.FormatInt(c, 10)] = time.Now()
			tg.UserMessage(c, c, "second")
		}
		calls := tg.WaitCalls(b, 30*time.Second, func(cs []bottest.Call) bool {
			n := 0
			for _, c := range cs {
				if strings.Contains(c.Params.Get("text"), "Queued") {
					n++
				}
			}
			return n >= chats
		}, "sendMessage")
		for _, c := range calls {
			if strings.Contains(c.Params.Get("text"), "Queued") {
				all = append(all, c.At.Sub(sent[c.Params.Get("chat_id")]))
			}
		}
		cancel()
		stop()
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
