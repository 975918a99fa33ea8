package bot

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// benchQueue is the queue under benchmark plus the claiming side.
type benchQueue interface {
	Queue
	Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]queue.Lease, error)
	Ack(ctx context.Context, l queue.Lease, res queue.Result) error
}

// startBenchBot runs a Bot on q against a fake Bot API with limits off
// (the fake has no flood control; Telegram's own ~30 msg/s is not what is
// measured here).
func startBenchBot(b *testing.B, q Queue) (*bottest.Server, func()) {
	tg := bottest.New(b)
	log := logrus.New()
	log.SetOutput(io.Discard)
	bot, err := New(Config{Token: bottest.Token, APIEndpoint: tg.URL(), AllowAll: true, UserJobsPerMinute: -1,
		GlobalRate: 1e6, PollTimeout: time.Second, Logger: log, Consumer: "bench"}, q)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { bot.Run(ctx); close(done) }()
	tg.WaitCalls(b, 10*time.Second, func(c []bottest.Call) bool { return len(c) > 0 }, "setMyCommands")
	return tg, func() { cancel(); <-done }
}

// claimer claims jobs and acks them at once, reporting each claim's job
// goal and time on claimed.
func claimer(ctx context.Context, q benchQueue, claimed chan<- string, wg *sync.WaitGroup) {
	defer wg.Done()
	for ctx.Err() == nil {
		ls, err := q.Claim(ctx, "bench-worker", 64, 50*time.Millisecond)
		if err != nil {
			return
		}
		for _, l := range ls {
			claimed <- l.Job.Goal
			q.Ack(ctx, l, queue.Result{Answer: "ok"})
		}
	}
}

func benchQueues(b *testing.B) map[string]func() benchQueue {
	return map[string]func() benchQueue{
		"memory": func() benchQueue { return queue.NewMemory(queue.Options{}) },
		"redis": func() benchQueue {
			q, err := queue.NewRedis(context.Background(), queuetest.StartRedis(b), queue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return q
		},
	}
}

// BenchmarkUpdateToJobStart measures, one update at a time, the time from
// an update entering the fake Bot API (a long poll is waiting) to a worker
// claiming its job: long-poll wake-up, decode, authorization, enqueue.
func BenchmarkUpdateToJobStart(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			q := benchQueues(b)[name]()
			tg, stop := startBenchBot(b, q)
			defer stop()
			ctx, cancel := context.WithCancel(context.Background())
			claimed := make(chan string, 1024)
			var wg sync.WaitGroup
			wg.Add(1)
			go claimer(ctx, q, claimed, &wg)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				chat := int64(i%100 + 1)
				t0 := time.Now()
				tg.UserMessage(chat, chat, fmt.Sprintf("g%d", i))
				<-claimed
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkUpdates100Chats injects b.N updates spread over 100 chats at
// once and measures until every job was claimed (ingest) and until every
// reply was sent (round trip: status message, enqueue, claim, ack, result
// read, status deleted, reply sent).
func BenchmarkUpdates100Chats(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			q := benchQueues(b)[name]()
			tg, stop := startBenchBot(b, q)
			defer stop()
			ctx, cancel := context.WithCancel(context.Background())
			claimed := make(chan string, b.N+1)
			var wg sync.WaitGroup
			wg.Add(2)
			go claimer(ctx, q, claimed, &wg)
			go claimer(ctx, q, claimed, &wg)
			b.ResetTimer()
			t0 := time.Now()
			for i := range b.N {
				chat := int64(i%100 + 1)
				tg.UserMessage(chat, chat, fmt.Sprintf("g%d", i))
			}
			for range b.N {
				<-claimed
			}
			ingest := time.Since(t0)
			tg.WaitCalls(b, 5*time.Minute, func(c []bottest.Call) bool {
				n := 0
				for _, x := range c {
					if x.Params.Get("parse_mode") == "HTML" {
						n++
					}
				}
				return n >= b.N
			}, "sendMessage")
			round := time.Since(t0)
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(b.N)/ingest.Seconds(), "ingest-updates/s")
			b.ReportMetric(float64(b.N)/round.Seconds(), "roundtrip-updates/s")
		})
	}
}
