package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/beneath"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/chatdir"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/outschema"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// Exit codes a job's result carries: the code `odek run` would have exited
// with (odek-extension/v1 plus 130 for a cancelled run).
const (
	ExitOK        = agent.ExitOK
	ExitError     = agent.ExitError
	ExitSetup     = agent.ExitSetup
	ExitBudget    = agent.ExitBudget
	ExitCancelled = agent.ExitCancelled
)

// DefaultMaxArtifacts bounds the artifact metadata of one job result when
// JobRunner.MaxArtifacts is 0.
const DefaultMaxArtifacts = 32

// JobRunner runs queued chat jobs with the operator's configuration: the
// run function of `odek worker` and of odek-bot's embedded workers (it
// fits worker.RunFunc). Each job continues its chat's session, may only
// lower the configured limits with its own budget, and reports the files
// it wrote under its chat's artifact directory.
//
// A JobRunner is safe for concurrent use once its fields are set; it owns
// none of them.
type JobRunner struct {
	// Config is the loaded configuration. Required.
	Config *config.Config
	// LLM is shared by all jobs (one connection pool). nil ⇒ a client
	// per job.
	LLM agent.Model
	// Extensions are the MCP servers shared by all jobs (LoadExtensions).
	// nil ⇒ jobs get no MCP tools.
	Extensions *ext.Set
	// Sessions holds the chats' conversations. Required.
	Sessions session.Store
	// Logger receives per-job logs (field job_id). nil ⇒ discarded.
	Logger logrus.FieldLogger
	// WorkDir is where jobs run when ArtifactsDir is "". "" ⇒ the
	// process working directory.
	WorkDir string
	// ArtifactsDir, when set, gives every chat a working directory
	// <ArtifactsDir>/<chatdir name of the chat id> (0700) whose new files are reported as the
	// result's artifacts, paths relative to ArtifactsDir (a directory the
	// front end shares).
	ArtifactsDir string
	// Environ is the environment whose secret values are masked.
	Environ []string
	// ClientVersion is sent to extension servers.
	ClientVersion string
	// MaxArtifacts bounds the artifacts of one result; 0 ⇒
	// DefaultMaxArtifacts.
	MaxArtifacts int
	// SandboxABI reports the kernel's Landlock ABI; nil ⇒ sandbox.ABI.
	SandboxABI func() int
	// AllowedModels are the models a job may choose (queue.Job.Model);
	// nil ⇒ those listed in ODEK_TELEGRAM_MODELS of Environ (jobmodel.go).
	AllowedModels []string
	// JobTools, when set, gives each job tools of its own, built for the
	// job and the approver that asks its chat (cmd/odek and odek-bot give
	// every job the schedule tool of its chat this way).
	JobTools func(job queue.Job, approver tools.Prompter) []agent.Tool

	host    *Host // Start builds it with New from the fields above; every job is one host.Run
	started bool  // Start succeeded: Run refuses to run unprepared (unconfined) jobs
	sandbox SandboxStatus
	// chatsDir holds the chats' directories: ArtifactsDir, or, without
	// one, $ODEK_HOME/chats when jobs are confined.
	chatsDir string
}

// SandboxStatus is what a JobRunner's Start found out about the sandbox,
// for start-up logs and health reports.
type SandboxStatus struct {
	// Active is true when every job runs confined to its chat's directory.
	Active bool `json:"active"`
	// Mode is the configured sandbox.mode ("" for the default).
	Mode string `json:"mode"`
	// LandlockABI is the kernel's Landlock ABI (0: none).
	LandlockABI int `json:"landlock_abi"`
	// RequiredABI is the ABI the sandbox needs.
	RequiredABI int `json:"required_abi"`
	// Helper is the binary run as the sandbox helper for every confined
	// command (odek-sandbox beside odek, or odek itself; "" when off).
	Helper string `json:"helper,omitempty"`
}

// Sandbox reports the sandbox state Start found.
func (j *JobRunner) Sandbox() SandboxStatus { return j.sandbox }

// Start prepares what all jobs of a process share: it makes ArtifactsDir
// absolute and creates it (0700), builds the LLM client when LLM is nil,
// and starts the extension servers when Extensions is nil. Nobody can be
// asked at a terminal in a worker, so only servers and tools approved
// ahead load (auto_approve, `odek ext approve`, or approveMCP for
// ODEK_APPROVE_MCP=1). Each server's outcome is logged. Call Close when
// the process stops.
func (j *JobRunner) Start(ctx context.Context, approveMCP bool) error {
	if j.Logger == nil {
		j.Logger = discardLogger
	}
	log := j.Logger
	if j.ArtifactsDir != "" {
		dir, err := filepath.Abs(j.ArtifactsDir)
		if err != nil {
			return fmt.Errorf("artifacts directory: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("artifacts directory: %w", err)
		}
		j.ArtifactsDir = dir
	}
	if err := j.startSandbox(); err != nil {
		return err
	}
	// Every job is one Run of this Host, built like any other (New): the
	// model client, the shared extension servers and, when jobs are
	// confined, the ruleset template that never grants ODEK_HOME or the
	// other chats' directories.
	h, err := New(ctx, j.Config, HostOptions{
		Logger: log, Warn: func(w string) { log.Warn(w) }, Environ: j.Environ, ClientVersion: j.ClientVersion,
		ApproveMCP: approveMCP, WorkDir: j.WorkDir, SandboxABI: j.SandboxABI,
		LLM: j.LLM, ExtensionSet: j.Extensions, Extensions: j.Extensions == nil,
		Confine: j.sandbox.Active, SandboxDeny: []string{j.chatsDir},
	})
	if err != nil {
		return err
	}
	if j.Extensions == nil {
		for _, r := range h.Extensions() {
			log.WithField("server", r.Name).Info("extension " + r.String())
		}
	}
	j.host, j.LLM, j.Extensions = h, h.llm, h.ext
	StartupWindow(j.Config, h.llm, log)
	j.started = true
	return nil
}

// errNotStarted is Run's error before a successful Start: the sandbox has
// not been checked, so the job must not run.
var errNotStarted = errors.New("host: JobRunner.Run called before a successful Start")

// startSandbox reads the sandbox settings and, when jobs are to be
// confined (the default), checks that the kernel can enforce it: a worker
// that cannot confine its jobs refuses to start rather than run them
// open. sandbox.mode "off" is logged as a warning at every start.
func (j *JobRunner) startSandbox() error {
	log := j.Logger
	settings := j.Config.Sandbox
	probe := j.SandboxABI
	if probe == nil {
		probe = sandbox.ABI
	}
	abi := probe()
	j.sandbox = SandboxStatus{Active: settings.Active(true), Mode: settings.Mode, LandlockABI: abi, RequiredABI: sandbox.RequiredABI}
	fields := logrus.Fields{"landlock_abi": abi, "sandbox_mode": settings.Mode}
	if !j.sandbox.Active {
		log.WithFields(fields).Warn("sandbox OFF (sandbox.mode \"off\"): jobs are NOT confined; any chat's job can read every other chat's files, odek's configuration and reach Redis and the network")
		return nil
	}
	if err := CheckSandbox(abi); err != nil {
		return err
	}
	if j.ArtifactsDir != "" {
		j.chatsDir = j.ArtifactsDir
	} else {
		j.chatsDir = filepath.Join(j.Config.Home, "chats")
		if err := os.MkdirAll(j.chatsDir, 0o700); err != nil {
			return fmt.Errorf("chats directory: %w", err)
		}
	}
	if helper, err := sandbox.Helper(); err == nil {
		j.sandbox.Helper = helper
		fields["sandbox_helper"] = helper
	}
	log.WithFields(fields).WithField("chats_dir", j.chatsDir).Info("sandbox on: each job is confined to its chat's directory (Landlock)")
	// Each job gets a cgroup of its own where the worker can make one:
	// sandbox.max_processes then bounds the job as a whole (pids.max),
	// for root too.
	if where, err := sandbox.CgroupStatus(); err == nil {
		log.WithFields(fields).WithField("cgroups", where).Info("sandbox: each job runs in a cgroup of its own (pids.max = sandbox.max_processes, memory = sandbox.job_memory_mb, CPU time = sandbox.job_cpu_seconds)")
	} else if os.Geteuid() == 0 {
		// The kernel never applies RLIMIT_NPROC to root: one chat's fork
		// bomb would then crowd every other chat's jobs (the image runs
		// as uid 65532 for this reason).
		log.WithFields(fields).WithError(err).Warn("running as root without per-job cgroups: sandbox.max_processes (RLIMIT_NPROC) is not enforced for root, so one chat's job can start processes without bound; run the worker as an unprivileged user, or give it a cgroup (v2 delegated, or v1 pids) it can write")
	}
	return nil
}

// Close stops the extension servers Start started, within closeTimeout.
func (j *JobRunner) Close() error {
	return j.host.Close()
}

// discardLogger is the logger of a JobRunner without one.
var discardLogger = func() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}()

// Run runs one job to its result (it fits worker.RunFunc): sink receives
// the run's events, signals its agent signals (the answer as it streams,
// redacted; nil ⇒ none), approver answers the approvals the policy asks
// for. The error, when not nil, is the run's failure, redacted; the result
// is filled in either way.
func (j *JobRunner) Run(ctx context.Context, job queue.Job, sink events.Sink, signals func(agent.SignalEvent), approver tools.Prompter) (queue.Result, error) {
	var log logrus.FieldLogger = logrus.NewEntry(discardLogger)
	if j.Logger != nil {
		log = j.Logger
	}
	log = log.WithField("job_id", job.ID)
	failed := func(code int, err error) (queue.Result, error) {
		return queue.Result{Status: queue.StatusFailed, ExitCode: code}, err
	}
	if !j.started {
		return failed(ExitSetup, errNotStarted)
	}
	if err := job.Budget.Validate(); err != nil {
		return failed(ExitSetup, fmt.Errorf("job budget: %w", err))
	}
	switch job.Kind {
	case "":
	case queue.KindCompact:
		return j.runCompact(ctx, job, sink, log) // jobcompact.go
	default:
		return failed(ExitSetup, fmt.Errorf("job kind %q: this worker knows only %q", job.Kind, queue.KindCompact))
	}
	dir := j.WorkDir
	chats := j.ArtifactsDir
	if j.sandbox.Active {
		chats = j.chatsDir
	}
	if chats != "" {
		// An unguessable name (package chatdir): Landlock does not
		// mediate stat(2), so another chat's job must not know the path.
		d, err := chatdir.Ensure(chats, job.ChatID)
		if err != nil {
			return failed(ExitSetup, fmt.Errorf("chat work directory: %v", err))
		}
		dir = d
	}
	schema, repairs, err := jobOutputSchema(job)
	if err != nil {
		return failed(ExitSetup, err)
	}
	cfg := j.jobConfig(job, log)
	sid := JobSessionID(job)
	sess, err := j.Sessions.Load(ctx, sid)
	switch {
	case errors.Is(err, session.ErrNotFound):
		sess = &session.Session{ID: sid, Model: cfg.Model}
	case err != nil:
		return failed(ExitError, fmt.Errorf("loading the chat's session: %w", err))
	}
	start := time.Now()
	goal := JobGoal(job, sess.Messages)
	oc, runErr := j.host.Run(ctx, RunSpec{
		Goal: goal, Model: cfg.Model, WorkDir: dir, Confine: j.sandbox.Active,
		Session: sess, Store: j.Sessions, Lower: jobLower(job.Budget),
		Sink: sink, Signals: signals, Prompter: approver, Start: start,
		Images: jobImages(job, dir, log), ImagesOptional: job.Vision == "auto", // jobimages.go
		Logger: log, Warn: func(w string) { log.Warn(w) }, ExtraTools: j.jobTools(job, approver),
		OutputSchema: schema, OutputRepairs: repairs,
	})
	if errors.Is(runErr, ErrSetup) {
		return failed(ExitSetup, runErr)
	}
	out := queue.Result{
		Answer:     oc.Answer,
		ExitCode:   oc.ExitCode,
		DurationMS: oc.Duration.Milliseconds(),
		Usage: queue.Usage{PromptTokens: int64(oc.Usage.PromptTokens), CompletionTokens: int64(oc.Usage.CompletionTokens),
			CachedTokens: int64(oc.Usage.CachedTokens), CostUSD: oc.CostUSD},
	}
	if j.ArtifactsDir != "" {
		n := j.MaxArtifacts
		if n <= 0 {
			n = DefaultMaxArtifacts
		}
		out.Artifacts = CollectArtifacts(j.ArtifactsDir, dir, start, n)
	}
	if runErr != nil {
		msg := oc.Error
		if oc.Status == StatusOutputInvalid {
			msg = StatusOutputInvalid + ": " + msg
		}
		return out, errors.New(msg)
	}
	if oc.Output != nil {
		if b, err := json.Marshal(oc.Output); err == nil {
			out.Output = b
		}
	}
	return out, nil
}

// jobOutputSchema compiles a job's output schema (nil, 0 for none). A
// schema the queue accepted but that does not compile is the job's setup
// failure, named as such.
func jobOutputSchema(job queue.Job) (*outschema.Schema, int, error) {
	if len(job.OutputSchema) == 0 {
		return nil, 0, nil
	}
	s, err := outschema.Compile(job.OutputSchema)
	if err != nil {
		return nil, 0, fmt.Errorf("job output_schema: %w", err)
	}
	repairs := outschema.DefaultRepairs
	if job.OutputRepairs != nil {
		repairs = *job.OutputRepairs
	}
	return s, repairs, nil
}

// ResultExitCode is the exit code `odek run` gives a run that ended with
// runErr.
func ResultExitCode(runErr error) int {
	return agent.OutcomeOf(runErr).ExitCode
}

// ResumeNote replaces the goal of a job taken over from a worker that died
// after saving some of its steps: the goal is already in the conversation,
// followed by the steps done so far.
const ResumeNote = "[odek: the previous attempt at this request was interrupted (its worker stopped). The request and the steps already done are above; continue from where it stopped, without repeating finished steps.]"

// JobGoal is the user message a job's run starts with: its goal, or, when
// an earlier attempt of this job already saved the goal as the latest
// user message, ResumeNote, so the model is not asked twice.
func JobGoal(job queue.Job, history []agent.Message) string {
	if job.Attempt <= 1 {
		return job.Goal
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == agent.RoleUser {
			if history[i].Content == job.Goal {
				return ResumeNote
			}
			break
		}
	}
	return job.Goal
}

// JobSessionID is the session a job continues: its SessionID when that is
// a valid session id, else one derived from it, else one derived from the
// chat, so every chat has one conversation unless the front end names
// another.
func JobSessionID(job queue.Job) string {
	if session.ValidateID(job.SessionID) == nil {
		return job.SessionID
	}
	key := "chat:" + strconv.FormatInt(job.ChatID, 10)
	if job.SessionID != "" {
		key = "session:" + job.SessionID
	}
	sum := sha256.Sum256([]byte("odek-session/v1\x00" + key))
	return hex.EncodeToString(sum[:session.IDLen/2])
}

// MaxHashBytes is the largest artifact CollectArtifacts hashes; larger
// files are listed without a digest.
const MaxHashBytes = 64 << 20

// CollectArtifacts lists regular files under dir modified at or after
// since (at most max, symlinks skipped), with paths relative to root and
// the SHA-256 of each file up to MaxHashBytes. dir is a chat's directory,
// written by the chat's jobs (and by processes a job left behind), so it
// is never walked or opened by name: it is opened once and walked through
// descriptors with no symbolic link followed (package beneath); each file
// is opened O_NOFOLLOW|O_NONBLOCK, so a FIFO or device never blocks the
// worker, and its size, time and digest all come from that one
// descriptor. At most beneath.MaxWalkEntries entries are looked at.
func CollectArtifacts(root, dir string, since time.Time, max int) []queue.ArtifactMeta {
	var out []queue.ArtifactMeta
	since = since.Add(-time.Second) // coarse file system clocks
	prefix, err := filepath.Rel(root, dir)
	if err != nil || strings.HasPrefix(prefix, "..") {
		return nil
	}
	prefix = filepath.ToSlash(prefix)
	d, err := beneath.OpenDir(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	_ = d.Walk(0, func(e beneath.Entry) error {
		if len(out) >= max {
			return fs.SkipAll
		}
		f, fi, err := e.Parent.OpenFile(e.Name)
		if err != nil {
			return nil
		}
		defer f.Close()
		if fi.ModTime().Before(since) {
			return nil
		}
		rel := e.Rel
		if prefix != "." {
			rel = prefix + "/" + rel
		}
		out = append(out, queue.ArtifactMeta{Path: rel, Name: e.Name, Bytes: fi.Size(),
			MIME: mime.TypeByExtension(filepath.Ext(e.Name)), SHA256: hashOpen(f, fi)})
		return nil
	})
	return out
}

// hashOpen returns the hex SHA-256 of the open regular file f (fi its
// fstat) when it is at most MaxHashBytes and still that size, else "".
func hashOpen(f *os.File, fi fs.FileInfo) string {
	if fi.Size() > MaxHashBytes {
		return ""
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxHashBytes+1))
	if err != nil || n != fi.Size() {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// jobLower is the limits a job's own budget lowers: JobLimits, and its
// total-token cap (the rest of the chat's daily budget the bot sends), so
// the run stops with a budget outcome at what the chat has left.
func jobLower(b *queue.Budget) budget.Limits {
	l := JobLimits(b)
	if b != nil {
		l.MaxTotalTokens = b.MaxTotalTokens
	}
	return l
}

func (j *JobRunner) jobTools(job queue.Job, approver tools.Prompter) []agent.Tool {
	if j.JobTools == nil {
		return nil
	}
	return j.JobTools(job, approver)
}
