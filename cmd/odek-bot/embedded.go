package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/worker"
)

// embeddedWorkers are the in-process workers of embedded mode.
type embeddedWorkers struct {
	w    *worker.Worker
	done chan error
}

// startEmbedded loads odek's configuration as `odek run` does and starts
// e.Workers in-process workers on q. Sessions are files under
// $ODEK_HOME/sessions.
func startEmbedded(ctx context.Context, q *queue.Memory, e env, log *logrus.Logger) (*embeddedWorkers, error) {
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
	client, err := llm.New(llm.Config{
		BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, DisableStreaming: !cfg.LLM.Stream,
		MaxAttempts: cfg.LLM.MaxAttempts, IdleTimeout: cfg.LLM.IdleTimeout(), RequestTimeout: cfg.LLM.RequestTimeout(),
	})
	if err != nil {
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
	dir := e.ArtifactsDir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("ODEK_ARTIFACTS_DIR: %w", err)
		}
	}
	r := &runner{cfg: cfg, client: client, store: &session.FileStore{Dir: filepath.Join(home, "sessions")},
		log: log, workDir: wd, artifacts: dir, environ: os.Environ()}
	w, err := worker.New(worker.Config{Queue: q, Run: r.run, Name: "embedded", Concurrency: e.Workers, Logger: log})
	if err != nil {
		return nil, err
	}
	ew := &embeddedWorkers{w: w, done: make(chan error, 1)}
	go func() { ew.done <- w.Run(context.WithoutCancel(ctx)) }()
	return ew, nil
}

// shutdown lets running jobs finish for up to 30 s; in embedded mode the
// queue dies with the process, so unfinished jobs are lost (the chat saw
// no reply and can ask again).
func (e *embeddedWorkers) shutdown(log logrus.FieldLogger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.w.Shutdown(ctx); err != nil {
		log.WithError(err).Warn("odek-bot: embedded workers stopped with jobs unfinished")
	}
	<-e.done
}

// runner runs one job with the operator's configuration, the chat's
// session and the job's budget.
type runner struct {
	cfg       *config.Config
	client    agent.Completer
	store     session.Store
	log       logrus.FieldLogger
	workDir   string
	artifacts string
	environ   []string
}

func (r *runner) run(ctx context.Context, job queue.Job, sink events.Sink, approver tools.Prompter) (queue.Result, error) {
	log := r.log.WithField("job_id", job.ID)
	limits, _, _, err := budget.FromSections(nil, job.Budget)
	if err != nil {
		return queue.Result{Status: queue.StatusFailed, ExitCode: exitSetup}, fmt.Errorf("job budget: %w", err)
	}
	dir := r.workDir
	if r.artifacts != "" {
		dir = filepath.Join(r.artifacts, strconv.FormatInt(job.ChatID, 10))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return queue.Result{Status: queue.StatusFailed, ExitCode: exitSetup}, fmt.Errorf("chat directory: %v", err)
		}
	}
	sid := sessionIDFor(job)
	sess, err := r.store.Load(ctx, sid)
	switch {
	case errors.Is(err, session.ErrNotFound):
		sess = &session.Session{ID: sid, Model: r.cfg.Model}
	case err != nil:
		return queue.Result{Status: queue.StatusFailed, ExitCode: exitError}, fmt.Errorf("loading the chat's session: %w", err)
	}
	start := time.Now()
	rt, err := host.Build(ctx, host.Options{
		Config: r.cfg, WorkDir: dir, Logger: log, Prompter: approver, EventSink: sink, Environ: r.environ,
		Warn:         func(w string) { log.Warn(w) },
		AdjustLimits: func(l *budget.Limits) { *l, _ = budget.MergeLimits(*l, limits) },
		SessionID:    sid, Start: start,
	})
	if err != nil {
		return queue.Result{Status: queue.StatusFailed, ExitCode: exitSetup}, err
	}
	defer rt.Close()
	acfg := rt.Agent
	acfg.LLM = r.client
	acfg.History = sess.Messages
	acfg.Persist = func(msgs []llm.Message) error {
		sess.Messages = msgs
		return r.store.Save(context.WithoutCancel(ctx), sess)
	}
	res, runErr := agent.Run(ctx, acfg, job.Goal)
	out := queue.Result{
		Answer:     rt.Redactor.String(res.Answer),
		DurationMS: res.Duration.Milliseconds(),
		Usage: queue.Usage{PromptTokens: int64(res.Usage.PromptTokens), CompletionTokens: int64(res.Usage.CompletionTokens),
			CostUSD: rt.Budget.Snapshot().CostUSD},
	}
	if r.artifacts != "" {
		out.Artifacts = newFiles(r.artifacts, dir, start, 32)
	}
	if runErr != nil {
		out.ExitCode = exitError
		return out, errors.New(rt.Redactor.String(runErr.Error()))
	}
	return out, nil
}

// sessionIDFor maps a job's SessionID (the bot sends "telegram:<chat>…")
// to a valid session id: 32 hex digits of its SHA-256.
func sessionIDFor(job queue.Job) string {
	key := job.SessionID
	if key == "" {
		key = "chat:" + strconv.FormatInt(job.ChatID, 10)
	}
	sum := sha256.Sum256([]byte("odek-bot-session/v1\x00" + key))
	return hex.EncodeToString(sum[:session.IDLen/2])
}

// newFiles lists regular files under dir changed since the job started
// (at most max, symlinks skipped), with paths relative to root.
func newFiles(root, dir string, since time.Time, max int) []queue.ArtifactMeta {
	var out []queue.ArtifactMeta
	since = since.Add(-time.Second)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= max {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.ModTime().Before(since) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil
		}
		out = append(out, queue.ArtifactMeta{Path: filepath.ToSlash(rel), Name: d.Name(), Bytes: fi.Size(), MIME: mime.TypeByExtension(filepath.Ext(d.Name()))})
		return nil
	})
	return out
}

// tagNames returns the env tag of every field of *v.
func tagNames(v any) []string {
	t := reflect.TypeOf(v).Elem()
	var out []string
	for i := range t.NumField() {
		if n := t.Field(i).Tag.Get("env"); n != "" {
			out = append(out, n)
		}
	}
	return out
}
