package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/worker"
	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

// queueFlags are the queue settings every process sharing a Redis must
// agree on (`odek worker`, `odek queue`).
type queueFlags struct {
	redisURL    string
	prefix      string
	lease       time.Duration
	maxAttempts int
}

func (q *queueFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&q.redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL, e.g. redis://localhost:6379/0 (env REDIS_URL)")
	fs.StringVar(&q.prefix, "prefix", envOr("ODEK_QUEUE_PREFIX", "odek:"), "key prefix of the queue and sessions (env ODEK_QUEUE_PREFIX)")
	fs.DurationVar(&q.lease, "lease", envDuration("ODEK_QUEUE_LEASE", 30*time.Second), "lease of a claimed job without heartbeat before another worker takes it over (env ODEK_QUEUE_LEASE)")
	fs.IntVar(&q.maxAttempts, "max-attempts", envInt("ODEK_QUEUE_MAX_ATTEMPTS", 3), "claims of a job before it is dead-lettered (env ODEK_QUEUE_MAX_ATTEMPTS)")
}

func (q *queueFlags) options() queue.Options {
	return queue.Options{Prefix: q.prefix, LeaseTTL: q.lease, MaxAttempts: q.maxAttempts}
}

// errNoRedis explains why a worker without Redis has nothing to do.
var errNoRedis = errors.New("no Redis configured: set REDIS_URL or pass --redis URL (workers take jobs from Redis; without it the bot runs its own in-process workers)")

// connect opens the Redis client and the queue. The URL is never echoed:
// it may carry a password.
func (q *queueFlags) connect(ctx context.Context) (*redis.Client, *queue.Redis, error) {
	if q.redisURL == "" {
		return nil, nil, withCode(exitSetup, errNoRedis)
	}
	opt, err := redis.ParseURL(q.redisURL)
	if err != nil {
		return nil, nil, withCode(exitSetup, errors.New("--redis / REDIS_URL is not a valid redis:// or rediss:// URL"))
	}
	c := redis.NewClient(opt)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	qu, err := queue.NewRedis(cctx, c, q.options())
	if err != nil {
		c.Close()
		return nil, nil, withCode(exitSetup, fmt.Errorf("connecting to Redis at %s: %w", opt.Addr, err))
	}
	return c, qu, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

func envDuration(k string, def time.Duration) time.Duration {
	if d, err := parseSeconds(os.Getenv(k)); err == nil && d > 0 {
		return d
	}
	return def
}

type workerFlags struct {
	q               queueFlags
	concurrency     int
	name            string
	metricsAddr     string
	shutdownTimeout time.Duration
	artifacts       string
	approvalTimeout time.Duration
	sessionTTL      time.Duration
	logLevel        string
}

func cmdWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f workerFlags
	fs := flag.NewFlagSet("odek worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.q.register(fs)
	fs.IntVar(&f.concurrency, "concurrency", envInt("ODEK_WORKER_CONCURRENCY", 4), "jobs run at once (env ODEK_WORKER_CONCURRENCY)")
	fs.StringVar(&f.name, "name", os.Getenv("ODEK_WORKER_NAME"), "consumer name, unique per worker (default host-pid-random; env ODEK_WORKER_NAME)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", os.Getenv("ODEK_WORKER_METRICS_ADDR"), "serve /healthz and /metrics on this address, e.g. :9464 (default off; env ODEK_WORKER_METRICS_ADDR)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", envDuration("ODEK_WORKER_SHUTDOWN_TIMEOUT", 30*time.Second), "on SIGTERM, how long running jobs may finish before they are canceled and left for redelivery")
	fs.StringVar(&f.artifacts, "artifacts", os.Getenv("ODEK_ARTIFACTS_DIR"), "directory shared with the front end; each chat works in <dir>/<chat id> and files a job writes there are reported as artifacts (default: the working directory, no artifacts; env ODEK_ARTIFACTS_DIR)")
	fs.DurationVar(&f.approvalTimeout, "approval-timeout", envDuration("ODEK_APPROVAL_TIMEOUT", queue.DefaultApprovalTimeout), "how long a tool approval waits for the chat before denying")
	fs.DurationVar(&f.sessionTTL, "session-ttl", envDuration("ODEK_SESSION_TTL", 0), "forget a chat's session this long after its last job (default never)")
	fs.StringVar(&f.logLevel, "log-level", envOr("ODEK_LOG_LEVEL", "info"), "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return withCode(exitOK, errors.Join(errReported, err))
		}
		return withCode(exitSetup, errors.Join(errReported, err))
	}
	if fs.NArg() > 0 {
		return usageErr("odek worker takes no arguments, got %q", fs.Args())
	}
	if f.concurrency < 1 {
		return usageErr("--concurrency must be ≥ 1, got %d", f.concurrency)
	}
	log := logrus.New()
	log.SetOutput(stderr)
	lvl, err := logrus.ParseLevel(f.logLevel)
	if err != nil {
		return usageErr("--log-level: %v", err)
	}
	log.SetLevel(lvl)

	cfg, warnings, err := config.Load(config.Options{})
	if err != nil {
		return withCode(exitSetup, err)
	}
	for _, w := range warnings {
		log.Warn(w.String())
	}
	if err := cfg.ResolveEndpoint(ctx, nil); err != nil {
		return withCode(exitSetup, err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return withCode(exitSetup, err)
	}

	rc, q, err := f.q.connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	store := &session.RedisStore{Client: rc, Prefix: f.q.prefix, TTL: f.sessionTTL}
	// One LLM client and one set of extension servers serve every job.
	jr := &host.JobRunner{Config: cfg, Sessions: store, Logger: log,
		WorkDir: wd, ArtifactsDir: f.artifacts, Environ: os.Environ(), ClientVersion: version}
	if err := jr.Start(ctx, os.Getenv("ODEK_APPROVE_MCP") == "1"); err != nil {
		return withCode(exitSetup, err)
	}
	defer jr.Close()

	w, err := worker.New(worker.Config{
		Queue: q, Run: jr.Run, Name: f.name, Concurrency: f.concurrency, ShutdownTimeout: f.shutdownTimeout,
		ApprovalTimeout: f.approvalTimeout, Logger: log,
		Health: func() map[string]any { return map[string]any{"sandbox": jr.Sandbox()} },
		// Heartbeats well inside the lease, at most every 500 ms (cancel latency).
		HeartbeatInterval: min(f.q.lease/3, 500*time.Millisecond),
		LeaseTTL:          f.q.lease,
	})
	if err != nil {
		return withCode(exitSetup, err)
	}
	if f.metricsAddr != "" {
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return withCode(exitSetup, fmt.Errorf("--metrics-addr: %w", err))
		}
		srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.WithField("addr", ln.Addr().String()).Info("odek worker: serving /healthz and /metrics")
	}
	log.WithFields(logrus.Fields{"concurrency": f.concurrency, "prefix": f.q.prefix}).Infof("odek worker %s: waiting for jobs", w.Name())

	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(context.WithoutCancel(ctx)) }()
	select {
	case err := <-runDone:
		return err
	case <-ctx.Done():
	}
	log.WithField("timeout", f.shutdownTimeout).Info("odek worker: signal received; finishing running jobs")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	serr := w.Shutdown(sctx)
	if err := <-runDone; err != nil {
		return err
	}
	if serr != nil {
		log.WithError(serr).Warn("odek worker: stopped")
		return nil // the jobs are safe in the queue; this is not a failure of the worker
	}
	log.Info("odek worker: stopped")
	return nil
}
