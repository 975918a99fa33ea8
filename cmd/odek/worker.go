package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/odekrun/odek/schedule"
	"io"
	"net"
	"net/http"
	"os"
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
	// explicit names the shared flags given on the command line or in the
	// environment (they must match the stored shared config).
	explicit map[string]bool
}

// registerConn adds --redis and --prefix (every command), their defaults
// from env.
func (q *queueFlags) registerConn(fs *flag.FlagSet, env config.WorkerEnv) {
	fs.StringVar(&q.redisURL, "redis", env.RedisURL, config.EnvUsage(&env, "REDIS_URL"))
	fs.StringVar(&q.prefix, "prefix", env.QueuePrefix, config.EnvUsage(&env, "ODEK_QUEUE_PREFIX"))
}

// workerEnv reads the worker's and queue's variables; a value that does
// not parse is a setup error naming the variable.
func workerEnv() (config.WorkerEnv, error) {
	var env config.WorkerEnv
	if err := config.ReadEnv(nil, &env); err != nil {
		return env, withCode(exitSetup, err)
	}
	return env, nil
}

// registerShared adds --lease and --max-attempts (odek worker only: the
// first worker stores them in <prefix>config, later ones must agree).
func (q *queueFlags) registerShared(fs *flag.FlagSet, env config.WorkerEnv) {
	q.explicit = map[string]bool{"lease": config.EnvSet("ODEK_QUEUE_LEASE"), "max-attempts": config.EnvSet("ODEK_QUEUE_MAX_ATTEMPTS")}
	fs.DurationVar(&q.lease, "lease", env.Lease.D(), config.EnvUsage(&env, "ODEK_QUEUE_LEASE"))
	fs.IntVar(&q.maxAttempts, "max-attempts", env.MaxAttempts, config.EnvUsage(&env, "ODEK_QUEUE_MAX_ATTEMPTS"))
}

// markExplicit records which shared flags fs got on the command line.
func (q *queueFlags) markExplicit(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "lease" || f.Name == "max-attempts" {
			q.explicit[f.Name] = true
		}
	})
}

func (q *queueFlags) options() queue.Options {
	return queue.Options{Prefix: q.prefix, LeaseTTL: q.lease, MaxAttempts: q.maxAttempts}
}

// optionsDefault are the options of a command that does not claim jobs
// (lease and attempts matter only to workers' claims).
func (q *queueFlags) optionsDefault() queue.Options {
	return queue.Options{Prefix: q.prefix}
}

// errNoRedis explains why a worker without Redis has nothing to do.
var errNoRedis = errors.New("no Redis configured: set REDIS_URL or pass --redis URL (workers take jobs from Redis; without it the bot runs its own in-process workers)")

// client parses the URL (any form queue.ParseRedisURL takes: one node,
// Sentinel, Cluster, with or without TLS) and returns a client and where it
// points. The URL is never echoed: it may carry a password.
func (q *queueFlags) client() (redis.UniversalClient, string, error) {
	if q.redisURL == "" {
		return nil, "", withCode(exitSetup, errNoRedis)
	}
	c, u, err := queue.NewRedisClient(q.redisURL)
	if err != nil {
		return nil, "", withCode(exitSetup, fmt.Errorf("--redis / REDIS_URL: %w", err))
	}
	return c, u.String(), nil
}

// connect opens the Redis client and the queue for command what, failing
// at once (exit 69) when Redis is unreachable.
func (q *queueFlags) connect(ctx context.Context, what string, opts queue.Options) (redis.UniversalClient, *queue.Redis, error) {
	c, addr, err := q.client()
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Ping(cctx).Err(); err != nil {
		c.Close()
		return nil, nil, redisErr(what, addr, err)
	}
	qu, err := queue.NewRedis(cctx, c, opts)
	if err != nil {
		c.Close()
		return nil, nil, redisErr(what, addr, err)
	}
	return c, qu, nil
}

// connectWorker waits for Redis with backoff (logging each retry), agrees
// on the shared config and opens the queue.
func (q *queueFlags) connectWorker(ctx context.Context, log logrus.FieldLogger) (redis.UniversalClient, *queue.Redis, error) {
	c, addr, err := q.client()
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (redis.UniversalClient, *queue.Redis, error) {
		c.Close()
		if ctx.Err() != nil {
			return nil, nil, withCode(exitCancelled, fmt.Errorf("odek worker: stopped while waiting for Redis at %s: %v", addr, rootCause(err)))
		}
		return nil, nil, redisErr("odek worker", addr, err)
	}
	err = queue.WaitRedis(ctx, c, func(attempt int, d time.Duration, err error) {
		log.WithFields(logrus.Fields{"redis": addr, "attempt": attempt, "retry_in": d.Round(time.Millisecond).String()}).
			Warnf("odek worker: Redis unreachable (%s); waiting for it", rootCause(err))
	})
	if err != nil {
		return fail(err)
	}
	sc, err := queue.WriteSharedConfig(ctx, c, q.prefix, queue.SharedConfig{LeaseTTL: q.lease, MaxAttempts: q.maxAttempts}, true)
	if err != nil {
		return fail(err)
	}
	if err := q.agree(sc, log); err != nil {
		c.Close()
		return nil, nil, err
	}
	qu, err := queue.NewRedis(ctx, c, q.options())
	if err != nil {
		return fail(err)
	}
	return c, qu, nil
}

// agree adopts the stored shared config, or fails when a flag given
// explicitly disagrees with it (queue.AgreeShared).
func (q *queueFlags) agree(sc queue.SharedConfig, log logrus.FieldLogger) error {
	mine := queue.SharedConfig{LeaseTTL: q.lease, MaxAttempts: q.maxAttempts}
	got, clash := queue.AgreeShared(sc, mine, queue.SharedExplicit{LeaseTTL: q.explicit["lease"], MaxAttempts: q.explicit["max-attempts"]})
	if len(clash) > 0 {
		return withCode(exitSetup, queue.SharedClashError(q.prefix, clash))
	}
	if got != mine {
		log.WithFields(logrus.Fields{"lease": got.LeaseTTL.String(), "max_attempts": got.MaxAttempts}).Info("odek worker: using the queue's shared lease and max attempts")
	}
	q.lease, q.maxAttempts = got.LeaseTTL, got.MaxAttempts
	return nil
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
	env, err := workerEnv()
	if err != nil {
		return err
	}
	var penv config.ProcessEnv
	if err := config.ReadEnv(nil, &penv); err != nil {
		return withCode(exitSetup, err)
	}
	fs := flag.NewFlagSet("odek worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.q.registerConn(fs, env)
	f.q.registerShared(fs, env)
	fs.IntVar(&f.concurrency, "concurrency", env.Concurrency, config.EnvUsage(&env, "ODEK_WORKER_CONCURRENCY"))
	fs.StringVar(&f.name, "name", env.Name, config.EnvUsage(&env, "ODEK_WORKER_NAME"))
	fs.StringVar(&f.metricsAddr, "metrics-addr", env.MetricsAddr, config.EnvUsage(&env, "ODEK_WORKER_METRICS_ADDR"))
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", env.ShutdownTimeout.D(), config.EnvUsage(&env, "ODEK_WORKER_SHUTDOWN_TIMEOUT"))
	fs.StringVar(&f.artifacts, "artifacts", env.ArtifactsDir, config.EnvUsage(&env, "ODEK_ARTIFACTS_DIR"))
	fs.DurationVar(&f.approvalTimeout, "approval-timeout", env.ApprovalTimeout.D(), config.EnvUsage(&env, "ODEK_APPROVAL_TIMEOUT"))
	fs.DurationVar(&f.sessionTTL, "session-ttl", env.SessionTTL.D(), config.EnvUsage(&env, "ODEK_SESSION_TTL"))
	fs.StringVar(&f.logLevel, "log-level", env.LogLevel, config.EnvUsage(&env, "ODEK_LOG_LEVEL"))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return withCode(exitOK, errors.Join(errReported, err))
		}
		return withCode(exitSetup, errors.Join(errReported, err))
	}
	if fs.NArg() > 0 {
		return usageErr("odek worker takes no arguments, got %q", fs.Args())
	}
	f.q.markExplicit(fs)
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
	// telemetry (issue 24): a trace per job when OTEL_* configures a collector.
	_, endTrace, err := startTracing(ctx, "odek-worker", "", log)
	if err != nil {
		return withCode(exitSetup, err)
	}
	defer endTrace()
	// go-redis' own log lines (pool dial failures…) go through logrus too.
	redis.SetLogger(worker.RedisLogger{Log: log.WithField("worker", f.name)})

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

	rc, q, err := f.q.connectWorker(ctx, log)
	if err != nil {
		return err
	}
	defer rc.Close()
	store := &session.RedisStore{Client: rc, Prefix: f.q.prefix, TTL: f.sessionTTL}
	// One LLM client and one set of extension servers serve every job.
	jr := &host.JobRunner{Config: cfg, Sessions: store, Logger: log,
		WorkDir: wd, ArtifactsDir: f.artifacts, Environ: os.Environ(), ClientVersion: version,
		AllowedModels: host.ParseModels(env.Models)}
	jr.JobTools = scheduleTools(schedule.NewRedis(rc, f.q.prefix), q, log) // schedule.go: the model's schedule tool
	if err := jr.Start(ctx, penv.ApproveMCP); err != nil {
		return withCode(exitSetup, err)
	}
	defer jr.Close()

	// The Redis deployment as this worker sees it: mode, master of the
	// queue's slot, replicas, failovers seen (health and metrics).
	topo := queue.NewTopologyWatcher(rc, queue.KeyPrefix(f.q.prefix)+"jobs")
	tctx, stopTopo := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTopo()
	go topo.Run(tctx, 2*time.Second)
	w, err := worker.New(worker.Config{
		Queue: q, Run: jr.Run, Name: f.name, Concurrency: f.concurrency, ShutdownTimeout: f.shutdownTimeout,
		ApprovalTimeout: f.approvalTimeout, Logger: log,
		Health: func() map[string]any { return map[string]any{"sandbox": jr.Sandbox(), "redis": topo.Health()} },
		// Heartbeats well inside the lease, at most every 500 ms (cancel latency).
		HeartbeatInterval: min(f.q.lease/3, 500*time.Millisecond),
		LeaseTTL:          f.q.lease,
		Version:           version,
		AfterResult:       retrySchedule(rc, f.q.prefix, log), // schedule.go: a failed one-shot fires again
	})
	if err != nil {
		return withCode(exitSetup, err)
	}
	if err := w.AddCounterFunc("odek_redis_master_changes_total",
		"Changes of the Redis master of the queue's slot (failovers, master restarts) this worker saw.",
		func() float64 { _, n, _ := topo.Snapshot(); return float64(n) }); err != nil {
		return withCode(exitSetup, err)
	}
	if err := w.AddCounterFunc("odek_redis_unreplicated_writes_total",
		"Queue writes (enqueue, result, cancel) accepted although no replica confirmed them in time (docs/QUEUE.md, durability through failover).",
		func() float64 { return float64(queue.Replication(rc).Unconfirmed) }); err != nil {
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
	defer hostSchedules(ctx, rc, q, f.q.prefix, w.Name(), f.q.lease, w.AddCounterFunc, log)()
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
