package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/schedule"
	"github.com/sirupsen/logrus"
)

// startSchedules runs the schedule firing loop in the bot (docs/SCHEDULES.md):
// on the Redis store beside the queue in distributed mode (workers fire
// too; the store's claim makes each fire happen once), on the embedded
// store file (ODEK_SCHEDULE_FILE, default $ODEK_HOME/schedules.json, the
// one `odek schedule` uses without Redis) in embedded mode.
// ODEK_SCHEDULES=off turns it off. The returned func stops it; a setup
// problem is logged and leaves schedules off rather than the bot down.
func startSchedules(ctx context.Context, e env, q schedule.Enqueuer, log logrus.FieldLogger) func() {
	if os.Getenv("ODEK_SCHEDULES") == "off" {
		return func() {}
	}
	host, _ := os.Hostname()
	r := &schedule.Runner{Queue: q, Name: fmt.Sprintf("odek-bot-%s-%d", host, os.Getpid()), Log: log}
	closeStore := func() {}
	if e.RedisURL != "" {
		rc, _, err := queue.NewRedisClient(e.RedisURL)
		if err != nil {
			log.WithError(err).Error("odek-bot: schedules off")
			return func() {}
		}
		r.Store, closeStore = schedule.NewRedis(rc, e.QueuePrefix), func() { _ = rc.Close() }
	} else {
		p := os.Getenv("ODEK_SCHEDULE_FILE")
		if p == "" {
			home, err := config.HomeDir(nil)
			if err == nil {
				err = os.MkdirAll(home, 0o700)
			}
			if err != nil {
				log.WithError(err).Error("odek-bot: schedules off")
				return func() {}
			}
			p = filepath.Join(home, "schedules.json")
		}
		r.Store = schedule.NewFile(p)
		log.WithField("file", p).Info("odek-bot: schedules fire from the embedded store")
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	return func() { cancel(); <-done; closeStore() }
}
