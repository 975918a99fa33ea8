// Command odek-bot is odek's Telegram front end: each chat message becomes
// a job, run by `odek worker` processes fed from Redis (REDIS_URL set) or,
// without Redis, by workers inside this process (the embedded default).
//
// Configuration is environment only (see --help, docs/TELEGRAM.md); the
// model settings of embedded workers come from odek's usual config files
// and ODEK_* variables, as for `odek run`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/bot"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/llm/speech"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/worker"
)

// Exit codes: agent's, declared once for every odek command.
const (
	exitOK    = agent.ExitOK
	exitError = agent.ExitError
	exitSetup = agent.ExitSetup
)

func main() {
	sandbox.Main() // embedded workers re-execute odek-bot as the sandbox helper
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ce *codeErr
		if errors.As(err, &ce) {
			if ce.err != nil {
				fmt.Fprintln(os.Stderr, "odek-bot:", ce.err)
			}
			os.Exit(ce.code)
		}
		fmt.Fprintln(os.Stderr, "odek-bot:", err)
		os.Exit(exitError)
	}
}

type codeErr struct {
	code int
	err  error
}

func (e *codeErr) Error() string { return fmt.Sprint(e.err) }
func (e *codeErr) Unwrap() error { return e.err }

// env is everything odek-bot reads from the environment, declared with
// the rest of odek's variables in internal/config. The compose test
// (compose_test.go) checks docker-compose.yml against its tags.
type env = config.BotEnv

const helpHeader = `odek-bot — odek's Telegram front end.

Usage: odek-bot              run the bot
       odek-bot healthcheck [URL]
                             GET URL (default http://127.0.0.1$ODEK_HEALTH_ADDR/healthz)
                             and exit 0 when it answers 200: for container
                             healthchecks of the bot and of odek workers

Every setting is an environment variable (a .env file is not read; use
your shell, systemd or docker compose to set them).

Environment variables:`

// envNames lists the variables odek-bot reads (for tests and docs).
func envNames() []string { return tagNames(&env{}) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "healthcheck" {
		return healthcheck(ctx, args[1:], stdout)
	}
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "help":
			fmt.Fprintln(stdout, helpHeader)
			// The bot's own variables, those it shares with the workers,
			// and (embedded mode runs odek's own loop) odek's.
			g := config.EnvGroups()
			fmt.Fprint(stdout, config.EnvText(append([]config.EnvGroup{{Title: "odek-bot", Vars: &env{}}, g[2]}, g[:2]...)))
			return nil
		default:
			return &codeErr{exitSetup, fmt.Errorf("unknown argument %q; odek-bot is configured through the environment (see --help)", a)}
		}
	}
	var e env
	if err := config.ReadEnv(nil, &e); err != nil {
		return &codeErr{exitSetup, err}
	}
	log := logrus.New()
	log.SetOutput(stderr)
	lvl, err := logrus.ParseLevel(e.LogLevel)
	if err != nil {
		return &codeErr{exitSetup, fmt.Errorf("ODEK_LOG_LEVEL: %v", err)}
	}
	log.SetLevel(lvl)
	endTrace, err := startTracing(ctx, log) // telemetry.go (issue 24)
	if err != nil {
		return &codeErr{exitSetup, err}
	}
	defer endTrace()

	cfg, err := botConfig(e, log)
	if err == nil {
		err = budgetConfig(e, &cfg) // budget.go
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return &codeErr{exitSetup, err}
	}

	var q bot.Queue
	var embedded *embeddedWorkers
	if e.RedisURL != "" {
		rc, ru, err := queue.NewRedisClient(e.RedisURL)
		if err != nil {
			return &codeErr{exitSetup, fmt.Errorf("REDIS_URL: %w", err)}
		}
		defer rc.Close()
		addr := ru.String()
		// Wait for Redis (logging each retry) instead of leaning on a restart
		// policy; go-redis' own log lines go through logrus.
		redis.SetLogger(worker.RedisLogger{Log: log})
		if err := queue.WaitRedis(ctx, rc, func(attempt int, d time.Duration, err error) {
			log.WithFields(logrus.Fields{"redis": addr, "attempt": attempt, "retry_in": d.Round(time.Millisecond).String()}).WithError(err).Warn("odek-bot: Redis unreachable; waiting for it")
		}); err != nil {
			return &codeErr{exitSetup, fmt.Errorf("connecting to Redis at %s: %w", addr, err)}
		}
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		rq, err := queue.NewRedis(cctx, rc, queue.Options{Prefix: e.QueuePrefix, ResultLeaseTTL: e.ResultLease.D()})
		cancel()
		if err != nil {
			return &codeErr{exitSetup, fmt.Errorf("connecting to Redis at %s: %w", addr, err)}
		}
		q = rq
		if mcfg, _, err := config.Load(config.Options{}); err != nil {
			log.WithError(err).Warn("odek-bot: odek's configuration could not be read; /compact is off and /status shows no context window")
		} else {
			cfg.Compactor, cfg.ContextWindow = modelSide(mcfg, redisSessions(rc, e.QueuePrefix), false, log)
		}
		if cfg.Compactor == nil {
			// No model key here: a worker compacts (queue.KindCompact).
			cfg.Compactor = &bot.QueueCompactor{Queue: rq}
		}
		if e.StatusLedger == "" {
			cfg.Ledger = queue.RedisStatusLedger{Client: rc, Key: queue.StatusLedgerKey(e.QueuePrefix)}
		}
		log.WithField("redis", addr).Info("odek-bot: distributed mode: jobs go to Redis for `odek worker` processes")
	} else {
		if e.Workers < 1 {
			return &codeErr{exitSetup, fmt.Errorf("ODEK_WORKERS must be ≥ 1 in embedded mode, got %d", e.Workers)}
		}
		home, err := config.HomeDir(nil)
		if err != nil {
			return &codeErr{exitSetup, fmt.Errorf("ODEK_HOME: %w", err)}
		}
		// One crash-safe store holds the queue, the chat state and the
		// status ledger (see openStore).
		st, err := openStore(ctx, e, &cfg, home, log)
		if err != nil {
			return &codeErr{exitSetup, err}
		}
		defer st.Close()
		q = st
		embedded, err = startEmbedded(ctx, st, e, log)
		if err != nil {
			return &codeErr{exitSetup, err}
		}
		cfg.Compactor, cfg.ContextWindow = modelSide(embedded.cfg, embedded.sessions, true, log)
		log.WithFields(logrus.Fields{"workers": e.Workers, "store": st.Path()}).Info("odek-bot: embedded mode: no REDIS_URL, jobs run inside this process")
	}

	stopSchedules, schedules := startSchedules(ctx, e, q, log) // schedule.go
	defer stopSchedules()
	cfg.Schedules = schedules
	cfg.Skills = skillCommands(log) // skills.go
	cfg.Transcriber = transcriber(ctx, e, log)
	cfg.Speaker = speaker(ctx, e, log) // voiceout.go
	crashHook(&cfg)                    // crashhook.go: crash tests only
	b, err := bot.New(cfg, q)
	if err != nil {
		return &codeErr{exitSetup, err}
	}
	if e.HealthAddr != "" {
		ln, err := net.Listen("tcp", e.HealthAddr)
		if err != nil {
			return &codeErr{exitSetup, fmt.Errorf("ODEK_HEALTH_ADDR: %w", err)}
		}
		srv := &http.Server{Handler: b.HealthHandler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.WithField("addr", ln.Addr().String()).Info("odek-bot: serving /healthz")
	}
	var runErr error
	if embedded == nil {
		runErr = b.Run(ctx)
	} else {
		// Embedded mode stops in order: the workers finish their jobs
		// (up to 30 s) while the bot still delivers, the answers finished
		// meanwhile reach their chats, then the bot stops.
		bctx, stopBot := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan error, 1)
		go func() { done <- b.Run(bctx) }()
		select {
		case runErr = <-done:
			stopBot()
			embedded.shutdown(log)
		case <-ctx.Done():
			embedded.shutdown(log)
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			b.Settle(sctx)
			cancel()
			stopBot()
			runErr = <-done
		}
	}
	if runErr != nil {
		return &codeErr{exitError, runErr}
	}
	log.Info("odek-bot: stopped")
	return nil
}

// transcriber is the speech-to-text client for voice messages: the model
// endpoint odek's configuration names (or ODEK_TELEGRAM_TRANSCRIBE_URL),
// with its API key. nil when turned off or when no endpoint is known
// (logged): voice messages are then declined with a reply saying so.
func transcriber(ctx context.Context, e env, log logrus.FieldLogger) bot.Transcriber {
	if strings.EqualFold(e.STTModel, "off") || e.STTModel == "" {
		return nil
	}
	declined := func(err error) bot.Transcriber {
		log.WithError(err).Warn("odek-bot: no endpoint for transcribing voice messages; they are declined (set ODEK_TELEGRAM_TRANSCRIBE_URL and _API_KEY, or ODEK_TELEGRAM_TRANSCRIBE_MODEL=off)")
		return nil
	}
	cfg, _, err := config.Load(config.Options{})
	if err != nil {
		return declined(err)
	}
	base, key := e.STTURL, e.STTKey
	if base == "" {
		// The model endpoint; without a key of its own (the compose bot
		// has none) it must resolve like a worker's.
		if key == "" {
			if err := cfg.ResolveEndpoint(ctx, nil); err != nil {
				return declined(err)
			}
		}
		base = cfg.BaseURL
	}
	if base == "" {
		return declined(errors.New("no model endpoint is configured"))
	}
	if key == "" && sameHost(base, cfg.BaseURL) {
		key = cfg.APIKey // the model endpoint's key goes to its own host only
	}
	return &speech.Transcriber{BaseURL: base, APIKey: key, Model: e.STTModel}
}

// sameHost reports whether two URLs name the same scheme, host and port.
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

// splitWords splits a comma-separated list, dropping empty entries.
func splitWords(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// healthcheck probes a /healthz endpoint: exit 0 on 200, 1 otherwise.
func healthcheck(ctx context.Context, args []string, stdout io.Writer) error {
	url := ""
	switch len(args) {
	case 0:
		var e env
		if err := config.ReadEnv(nil, &e); err != nil {
			return &codeErr{exitSetup, err}
		}
		addr := e.HealthAddr
		if addr == "" {
			return &codeErr{exitSetup, errors.New("healthcheck: give a URL or set ODEK_HEALTH_ADDR")}
		}
		if addr[0] == ':' {
			addr = "127.0.0.1" + addr
		}
		url = "http://" + addr + "/healthz"
	case 1:
		url = args[0]
	default:
		return &codeErr{exitSetup, errors.New("usage: odek-bot healthcheck [URL]")}
	}
	ctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &codeErr{exitSetup, fmt.Errorf("healthcheck: %w", err)}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &codeErr{exitError, fmt.Errorf("healthcheck: %w", err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return &codeErr{exitError, fmt.Errorf("healthcheck: %s answered %d: %s", url, resp.StatusCode, body)}
	}
	fmt.Fprintf(stdout, "%s", body)
	return nil
}

// botConfig maps the environment to bot.Config. Pure apart from the
// absolute path of the artifacts directory.
func botConfig(e env, log logrus.FieldLogger) (bot.Config, error) {
	users, err := bot.ParseIDs(e.AllowedUsers)
	if err != nil {
		return bot.Config{}, fmt.Errorf("ODEK_TELEGRAM_ALLOWED_USERS: %w", err)
	}
	chats, err := bot.ParseIDs(e.AllowedChats)
	if err != nil {
		return bot.Config{}, fmt.Errorf("ODEK_TELEGRAM_ALLOWED_CHATS: %w", err)
	}
	approvers, err := bot.ParseIDs(e.Approvers)
	if err != nil {
		return bot.Config{}, fmt.Errorf("ODEK_TELEGRAM_APPROVERS: %w", err)
	}
	if e.AgentTimeout <= 0 {
		return bot.Config{}, fmt.Errorf("ODEK_TELEGRAM_AGENT_TIMEOUT must be a positive number of seconds, got %d", e.AgentTimeout)
	}
	dir := e.ArtifactsDir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return bot.Config{}, fmt.Errorf("ODEK_ARTIFACTS_DIR: %w", err)
		}
	}
	var ledger bot.StatusLedger
	switch e.StatusLedger {
	case "", "off": // "": chosen by the mode in run
	default:
		p, err := filepath.Abs(e.StatusLedger)
		if err != nil {
			return bot.Config{}, fmt.Errorf("ODEK_TELEGRAM_STATUS_LEDGER: %w", err)
		}
		ledger = queue.FileStatusLedger{Dir: p}
	}
	var state bot.StateStore
	if e.StateFile != "" {
		p, err := filepath.Abs(e.StateFile)
		if err != nil {
			return bot.Config{}, fmt.Errorf("ODEK_TELEGRAM_STATE_FILE: %w", err)
		}
		state = fileState{path: p}
	}
	return bot.Config{
		State: state, VolatileQueue: e.RedisURL == "", Ledger: ledger, Models: host.ParseModels(e.Models), Stream: e.Stream, Busy: e.Busy, GroupContext: e.GroupCtx, AckReaction: e.AckReaction, Vision: e.Vision,
		Token: e.Token, APIEndpoint: e.APIEndpoint,
		AllowedUsers: users, AllowedChats: chats, AllowAll: e.AllowAll,
		DailyTokenBudget: e.DailyBudget, UserJobsPerMinute: e.UserRate,
		AgentTimeout: time.Duration(e.AgentTimeout) * time.Second,
		ArtifactDir:  dir, MaxDownloadBytes: e.MaxFileBytes, ChatStorageBytes: e.ChatStorage, GroupSession: e.GroupSession,
		SendArtifacts: e.SendFiles, Keywords: splitWords(e.Keywords),
		AdminCommands: splitWords(strings.ReplaceAll(strings.ToLower(e.AdminCmds), "/", "")),
		WebhookURL:    e.WebhookURL, WebhookListen: e.WebhookAddr, WebhookSecret: e.WebhookKey,
		Voice: e.Voice, Approvers: approvers,
		Logger: log,
	}, nil
}
