package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/schedule/scheduletool"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/schedule"
	"github.com/sirupsen/logrus"
)

// startSchedules runs the schedule firing loop in the bot (docs/SCHEDULES.md)
// and returns the schedule service the bot's /schedule, /remind and /tz
// use. Distributed mode keeps schedules in Redis beside the queue (the
// workers fire too; the store's claim makes each fire happen once);
// embedded mode keeps them in the embedded store's database (the same
// bbolt file as the queue), importing a schedules.json of an older
// version once. ODEK_SCHEDULES=off turns schedules off (nil service). The
// returned func stops the loop; a setup problem is logged and leaves
// schedules off rather than the bot down.
//
// Limits for chats: ODEK_SCHEDULE_MIN_INTERVAL (shortest interval, a Go
// duration; default 1m), ODEK_SCHEDULE_MAX_PER_CHAT (50),
// ODEK_SCHEDULE_MAX_PER_USER (20), ODEK_SCHEDULE_MAX_DAILY_FIRES (200 per
// chat in the next 24 h).
func startSchedules(ctx context.Context, e env, q schedule.Enqueuer, log logrus.FieldLogger) (func(), *schedule.Service) {
	if os.Getenv("ODEK_SCHEDULES") == "off" {
		return func() {}, nil
	}
	lim, err := schedule.LimitsFromEnv(os.Getenv)
	if err != nil {
		log.WithError(err).Error("odek-bot: schedules off")
		return func() {}, nil
	}
	host, _ := os.Hostname()
	r := &schedule.Runner{Queue: q, Name: fmt.Sprintf("odek-bot-%s-%d", host, os.Getpid()), Log: log}
	closeStore := func() {}
	switch st := q.(type) {
	case *estore.Store:
		kv := kvSchedules(st, log)
		r.Store = kv
		// `odek schedule` without Redis writes the file store while the
		// bot holds the embedded one: pick its schedules up as they come.
		r.BeforeTick = func(ctx context.Context) { importScheduleFile(ctx, kv, log) }
		log.WithField("store", st.Path()).Info("odek-bot: schedules are kept in the embedded store")
	default:
		if e.RedisURL == "" {
			log.Error("odek-bot: schedules off: no store for them")
			return func() {}, nil
		}
		rc, _, err := queue.NewRedisClient(e.RedisURL)
		if err != nil {
			log.WithError(err).Error("odek-bot: schedules off")
			return func() {}, nil
		}
		r.Store, closeStore = schedule.NewRedis(rc, e.QueuePrefix), func() { _ = rc.Close() }
	}
	sv := &schedule.Service{Store: r.Store, Queue: q, Limits: lim}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	return func() { cancel(); <-done; closeStore() }, sv
}

// The embedded store's schedule Store: one per process, since it keeps
// the state in memory after the first read (schedule.NewKV).
var kvStore struct {
	once sync.Once
	s    *schedule.File
}

// kvSchedules is that Store; the first call imports an older version's
// schedules file, before anything reads the store (the embedded workers
// may finish a scheduled job before the firing loop starts).
func kvSchedules(st *estore.Store, log logrus.FieldLogger) *schedule.File {
	kvStore.once.Do(func() {
		kvStore.s = schedule.NewKV(st)
		kv := kvStore.s
		st.ServeScheduleCounts(func(ctx context.Context) (any, error) { return kv.Counts(ctx) }) // odek queue stats --store
		importScheduleFile(context.Background(), kvStore.s, log)
	})
	return kvStore.s
}

// scheduleDropFile is the file store `odek schedule` writes without
// Redis: ODEK_SCHEDULE_FILE, else $ODEK_HOME/schedules.json ("" when no
// home).
func scheduleDropFile() string {
	if p := os.Getenv("ODEK_SCHEDULE_FILE"); p != "" {
		return p
	}
	home, err := config.HomeDir(nil)
	if err != nil {
		return ""
	}
	return filepath.Join(home, "schedules.json")
}

// importScheduleFile moves the schedules of the file store (an older
// version's, or the ones `odek schedule add` wrote without Redis while
// the bot runs) into the embedded store: the file is first renamed
// (*.importing), so a concurrent `odek schedule` writes a new file that
// the next call imports; each schedule whose id the store does not have
// is created as it is (state included); the file ends as *.imported.
// Nothing is lost when the bot dies midway: the next start imports the
// *.importing file first.
func importScheduleFile(ctx context.Context, kv *schedule.File, log logrus.FieldLogger) {
	p := scheduleDropFile()
	if p == "" {
		return
	}
	work := p + ".importing"
	if _, err := os.Stat(work); err != nil {
		if err := os.Rename(p, work); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				log.WithError(err).Warn("odek-bot: the schedules file could not be taken for import")
			}
			return
		}
	}
	list, err := schedule.NewFile(work).List(ctx, 0)
	if err != nil {
		log.WithError(err).Warn("odek-bot: the schedules file is not readable; not imported (left as " + work + ")")
		return
	}
	n := 0
	for _, s := range list {
		if _, err := kv.Get(ctx, s.ID); !errors.Is(err, schedule.ErrNotFound) {
			continue // imported before, or the store is down (next time)
		}
		if err := kv.Create(ctx, s, 0); err != nil {
			log.WithError(err).WithField("schedule", s.ID).Warn("odek-bot: importing a schedule failed; the file stays for the next try")
			return
		}
		n++
	}
	_ = os.Rename(work, p+".imported")
	log.WithFields(logrus.Fields{"file": p, "schedules": n}).Info("odek-bot: schedules imported into the embedded store")
}

// retrySchedule arms a failed one-shot schedule's retry (the embedded
// workers' AfterResult).
func retrySchedule(st *estore.Store, log logrus.FieldLogger) func(queue.Job, queue.Result) {
	return func(job queue.Job, res queue.Result) {
		if _, ok := schedule.ParseFireKey(job.IdempotencyKey); !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		next, err := schedule.RetryFailed(ctx, kvSchedules(st, log), job, res, time.Now())
		if err != nil {
			log.WithError(err).WithField("job_id", job.ID).Warn("odek-bot: arming a schedule's retry failed")
		} else if !next.IsZero() {
			log.WithFields(logrus.Fields{"job_id": job.ID, "next": next}).Info("odek-bot: a one-shot schedule's job failed; it fires again")
		}
	}
}

// scheduleTools gives every embedded job the schedule tool of its chat on
// the embedded store; nil when ODEK_SCHEDULES=off or the limits do not
// parse.
func scheduleTools(st *estore.Store, log logrus.FieldLogger) func(queue.Job, tools.Prompter) []agent.Tool {
	if os.Getenv("ODEK_SCHEDULES") == "off" {
		return nil
	}
	lim, err := schedule.LimitsFromEnv(os.Getenv)
	if err != nil {
		log.WithError(err).Error("odek-bot: the schedule tool is off")
		return nil
	}
	sv := &schedule.Service{Store: kvSchedules(st, log), Queue: st, Limits: lim}
	return func(job queue.Job, ask tools.Prompter) []agent.Tool {
		if job.ChatID == 0 {
			return nil
		}
		return []agent.Tool{scheduletool.New(sv, job, ask)}
	}
}
