package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/worker"
)

// version is set at link time (-ldflags "-X main.version=..."), like odek's.
var version = "dev"

// embeddedWorkers are the in-process workers of embedded mode.
type embeddedWorkers struct {
	w        *worker.Worker
	jobs     *host.JobRunner
	done     chan error
	cfg      *config.Config // the workers' resolved configuration
	sessions session.Store
}

// storeOptions configures embedded mode's queue: 30 s leases (a restart
// reclaims every lease at once anyway) and ODEK_QUEUE_MAX_ATTEMPTS, as
// `odek worker` reads it (default 3): how many times the process may die
// while a job runs alone before the job is dead-lettered.
func storeOptions() (queue.Options, error) {
	var w config.WorkerEnv
	if err := config.ReadEnv(nil, &w); err != nil {
		return queue.Options{}, err
	}
	if w.MaxAttempts < 1 {
		return queue.Options{}, fmt.Errorf("ODEK_QUEUE_MAX_ATTEMPTS must be ≥ 1, got %d", w.MaxAttempts)
	}
	return queue.Options{MaxAttempts: w.MaxAttempts}, nil
}

// startEmbedded loads odek's configuration as `odek run` does and starts
// e.Workers in-process workers on q, the embedded store. Sessions are
// files under $ODEK_HOME/sessions.
func startEmbedded(ctx context.Context, q *estore.Store, e env, log *logrus.Logger) (*embeddedWorkers, error) {
	cfg, warnings, err := config.Load(config.Options{})
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w.String())
	}
	if err := cfg.ResolveEndpoint(ctx, nil); err != nil {
		return nil, err
	}
	home, err := config.HomeDir(nil)
	if err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	// One LLM client and one set of extension servers serve every job.
	sessions := &session.FileStore{Dir: filepath.Join(home, "sessions")}
	r := &host.JobRunner{Config: cfg, Sessions: sessions,
		Logger: log, WorkDir: wd, ArtifactsDir: e.ArtifactsDir, Environ: os.Environ(), ClientVersion: version,
		AllowedModels: host.ParseModels(e.Models)}
	r.JobTools = scheduleTools(q, log) // schedule.go: the model's schedule tool
	if err := r.Start(ctx, config.ApproveMCP()); err != nil {
		return nil, err
	}
	// ODEK_APPROVAL_TIMEOUT is config.SharedEnv's, parsed as odek worker
	// parses it (0 ⇒ the queue's default).
	w, err := worker.New(worker.Config{Queue: q, Run: r.Run, Name: "embedded", Concurrency: e.Workers, Logger: log,
		ApprovalTimeout: e.ApprovalTimeout.D(), AfterResult: retrySchedule(q, log)})
	if err != nil {
		r.Close()
		return nil, err
	}
	ew := &embeddedWorkers{w: w, jobs: r, done: make(chan error, 1), cfg: cfg, sessions: sessions}
	go func() { ew.done <- w.Run(context.WithoutCancel(ctx)) }()
	return ew, nil
}

// shutdown lets running jobs finish for up to 30 s; a job still running
// after that stays in the store and runs again at the next start (its
// lease is reclaimed then), and its answer comes after the restart.
func (e *embeddedWorkers) shutdown(log logrus.FieldLogger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.w.Shutdown(ctx); err != nil {
		log.WithError(err).Warn("odek-bot: embedded workers stopped with jobs unfinished")
	}
	<-e.done
	if err := e.jobs.Close(); err != nil {
		log.WithError(err).Warn("odek-bot: extension servers stopped with errors")
	}
}

// tagNames returns the variables declared by *v, embedded structs
// included.
func tagNames(v any) []string { return config.EnvNames([]config.EnvGroup{{Vars: v}}) }
