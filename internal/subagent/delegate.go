package subagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/internal/beneath"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/tools"
	"github.com/sirupsen/logrus"
)

// DepthEnv carries a child's nesting depth (1 for a top-level run's
// children).
const DepthEnv = "ODEK_SUBAGENT_DEPTH"

// APIKeyFD is the file descriptor on which a child reads its API key.
const APIKeyFD = 3

// InlineMaxBytes is the largest text artifact inlined into the parent's
// context; larger or binary ones are read with artifact_read.
const InlineMaxBytes = 32 << 10

// killGrace is how long the parent waits past a task's timeout for the
// child to report its own timeout before it kills the process group.
const killGrace = 5 * time.Second

// pipeGrace is how long the parent keeps reading a child's stdout and
// stderr after the child has exited (cmd.WaitDelay).
const pipeGrace = time.Second

// EmitFunc sends an event of the run ctx belongs to; agent.Emit fits.
type EmitFunc func(ctx context.Context, typ events.Type, data map[string]any)

// emit sends a typed payload through f.
func emit(ctx context.Context, f EmitFunc, p events.Payload) { f(ctx, p.EventType(), p.Data()) }

// Options configure NewDelegateTool. Zero fields take the defaults noted.
type Options struct {
	// Executable is the odek binary started for each child; "" ⇒
	// os.Executable().
	Executable string
	// Environ is the children's base environment; nil ⇒ os.Environ(). The
	// API key variables (ODEK_API_KEY, OPENAI_API_KEY) and any inherited
	// DepthEnv are removed; DepthEnv is set to Depth+1.
	Environ []string
	// APIKey is passed to each child over an inherited pipe; "" ⇒ none.
	APIKey string
	// Model and BaseURL are written into every task file ("" ⇒ the child's
	// own configuration decides).
	Model, BaseURL string
	// WorkDir is the children's working directory; "" ⇒ the process's.
	WorkDir string
	// ArtifactsDir is where per-task artifact roots are created
	// (<ArtifactsDir>/<session or run>/<task_id>/, 0700): ~/.odek/artifacts
	// for an unconfined run; for a confined one a private directory of the
	// parent outside the root (the children's unconfined odek processes
	// write there, so no chat may). "" ⇒ children return no artifacts.
	ArtifactsDir string
	// Store receives the validated artifacts that are not inlined, for
	// artifact_read; nil ⇒ a private store (then only inlined content is
	// readable).
	Store *artifactstore.Store
	// Settings are the subagent config section (zero ⇒ defaults).
	Settings Settings
	// Depth is this process's depth (0 for a top-level run).
	Depth int
	// Tenant names whose share of the worker's sub-agent slots this run's
	// tasks count against (slots.go); "" ⇒ WorkDir, which in a worker is
	// the chat's directory. A sub-agent inherits its parent's (TenantEnv).
	Tenant string
	// MaxRisk is this run's own max_risk when it is itself a sub-agent
	// (a tools.Class); every task's max_risk is clamped to it
	// (ClampRisk), so a child cannot hand its children more than it may
	// do itself. "" ⇒ no ceiling.
	MaxRisk string
	// Confine, when set, is handed to every child (Task.Confine): it
	// works confined to the same root. ArtifactsDir must then lie outside
	// Confine.Root (Task.Validate refuses a root inside it).
	Confine *Confinement
	// Emit sends subagent_* events; nil ⇒ agent.Emit.
	Emit EmitFunc
	// TaskHook, when set, is told of each task before its child starts
	// (TaskEvent.Start; a non-empty refusal blocks the task, which then
	// fails with that reason and no child runs) and after it ended (the
	// result; the refusal is ignored): the operator's subagent_start and
	// subagent_stop hooks (issue 28). It runs on the tool call's
	// goroutine for that task.
	TaskHook func(ctx context.Context, ev TaskEvent) (refusal string)
	// Logger receives diagnostics; nil ⇒ discarded.
	Logger logrus.FieldLogger
}

// TaskEvent is what Options.TaskHook is told of a task.
type TaskEvent struct {
	// Start is set before the child starts; otherwise the task ended.
	Start bool
	// TaskID and Goal name the task.
	TaskID, Goal string
	// Result is the task's result when it ended (nil at the start).
	Result *Result
}

// Delegate is the delegate_tasks tool.
type Delegate struct {
	o Options
	// killGrace is how long past a task's timeout the parent waits before
	// killing the child (killGrace by default; tests shorten it).
	killGrace time.Duration
}

// ToolName is the delegate tool's name.
const ToolName = "delegate_tasks"

// NewDelegateTool returns the delegate_tasks tool.
func NewDelegateTool(o Options) *Delegate {
	o.Settings = o.Settings.WithDefaults()
	if o.Emit == nil {
		o.Emit = agent.Emit
	}
	if o.Store == nil {
		o.Store = &artifactstore.Store{}
	}
	if o.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Logger = l
	}
	return &Delegate{o: o, killGrace: killGrace}
}

// Definition describes the tool to the model.
func (d *Delegate) Definition() tools.Definition {
	return tools.Definition{
		Name: ToolName,
		Description: fmt.Sprintf("Delegate 1 to %d independent, focused tasks to sub-agents that run in parallel (at most %d at a time) "+
			"and report back a summary, artifacts and any denied actions. Each task: goal (required), context, guidance, "+
			"max_risk (the most dangerous action class allowed: safe, local_write, network_egress, code_execution, ...). "+
			"Sub-agents cannot ask the user; what needs approval is denied.", MaxTasks, d.o.Settings.MaxConcurrency),
		Parameters: json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","minItems":1,"maxItems":8,"items":{"type":"object",` +
			`"properties":{"goal":{"type":"string"},"context":{"type":"string"},"guidance":{"type":"string"},"max_risk":{"type":"string"}},"required":["goal"]}}},"required":["tasks"]}`),
	}
}

// TaskArg is one task of a delegate_tasks call.
type TaskArg struct {
	Goal     string `json:"goal"`
	Context  string `json:"context"`
	Guidance string `json:"guidance"`
	MaxRisk  string `json:"max_risk"`
}

// ParseTasks validates delegate_tasks arguments: 1–MaxTasks tasks, each
// with a goal; unknown fields are ignored. Errors wrap ErrInvalidTask.
// Pure.
func ParseTasks(raw []byte) ([]TaskArg, error) {
	if len(raw) > MaxTaskBytes*MaxTasks {
		return nil, fmt.Errorf("%w: arguments are %d bytes, limit %d", ErrInvalidTask, len(raw), MaxTaskBytes*MaxTasks)
	}
	var w struct {
		Tasks []TaskArg `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%w: want {\"tasks\": [{\"goal\": string, \"context\"?, \"guidance\"?, \"max_risk\"?}, ...]}: %v", ErrInvalidTask, err)
	}
	if len(w.Tasks) < 1 || len(w.Tasks) > MaxTasks {
		return nil, fmt.Errorf("%w: tasks: want 1 to %d tasks, got %d", ErrInvalidTask, MaxTasks, len(w.Tasks))
	}
	for i, t := range w.Tasks {
		tk := Task{Goal: t.Goal, Context: t.Context, Guidance: t.Guidance, MaxRisk: t.MaxRisk}
		if err := tk.Validate(); err != nil {
			return nil, fmt.Errorf("tasks[%d]: %w", i, err)
		}
	}
	return w.Tasks, nil
}

// Assess validates the arguments. Delegation is local_write: children
// never prompt, so they can do no more than the operator's policy allows
// without asking (ChildPolicy), and by default that is working on files in
// the workspace. Tasks whose max_risk is safe make the call safe.
func (d *Delegate) Assess(args json.RawMessage) (tools.Assessment, error) {
	ts, err := ParseTasks(args)
	if err != nil {
		return tools.Assessment{}, err
	}
	class := tools.ClassSafe
	for _, t := range ts {
		if t.MaxRisk != string(tools.ClassSafe) {
			class = tools.ClassLocalWrite
		}
	}
	return tools.Assessment{Class: class, Summary: map[string]any{"tasks": strconv.Itoa(len(ts))}}, nil
}

// ErrDepth starts the error result a run at the maximum depth gets when
// it calls delegate_tasks anyway.
var ErrDepth = errors.New("subagent: depth limit reached")

// Run starts one child per task and renders their results.
func (d *Delegate) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	ts, err := ParseTasks(args)
	if err != nil {
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	if d.o.Depth >= d.o.Settings.MaxDepth {
		return tools.Result{Text: fmt.Sprintf("%v: this agent runs at depth %d and subagent.max_depth is %d; do the work yourself", ErrDepth, d.o.Depth, d.o.Settings.MaxDepth), IsError: true}, nil
	}
	ci, _ := agent.CallFrom(ctx)
	outs := d.runAll(ctx, ci, ts)
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	return d.render(outs), nil
}

// outcome is one child's result as the parent saw it.
type outcome struct {
	index  int
	taskID string
	res    *Result
	refs   []artifacts.Ref
	inline map[string]string // id → content
	artErr error
}

func (d *Delegate) runAll(ctx context.Context, ci agent.CallInfo, ts []TaskArg) []outcome {
	outs := make([]outcome, len(ts))
	sem := make(chan struct{}, d.o.Settings.MaxConcurrency)
	runDir := ci.SessionID
	if runDir == "" {
		runDir = ci.RunID
	}
	if runDir == "" {
		runDir = "run-" + randomID()
	}
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			default:
				began := time.Now()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					outs[i] = outcome{index: i, res: &Result{Status: StatusError, Error: "subagent: cancelled before the task started"}}
					return
				}
				emit(ctx, d.o.Emit, events.SubagentConcurrencyWaitData{TaskIndex: i, Waited: time.Since(began)})
			}
			defer func() { <-sem }()
			release, err := d.takeSlot(ctx, i)
			if err != nil {
				outs[i] = outcome{index: i, res: &Result{Status: StatusError, Error: err.Error()}}
				return
			}
			defer release()
			outs[i] = d.runOne(ctx, ci, runDir, i, t)
		}()
	}
	wg.Wait()
	return outs
}

// makeArtifactRoot makes the 0700 directory dir/run/task (dir is made
// by name: the operator's or the parent's own directory; below it, by
// descriptor, no symbolic link followed) and returns its path.
func makeArtifactRoot(dir, run, task string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	d, err := beneath.OpenDir(dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	r, err := d.MkdirAllOpen(run+"/"+task, 0o700)
	if err != nil {
		return "", err
	}
	r.Close()
	return filepath.Join(dir, run, task), nil
}

// takeSlot takes one of the worker's sub-agent slots for task i within
// its chat's share (see slots.go): a top-level run waits for one
// (emitting subagent_concurrency_wait), a nested run is refused at once.
func (d *Delegate) takeSlot(ctx context.Context, i int) (func(), error) {
	p, err := d.pool()
	if err != nil {
		return nil, err
	}
	tag := d.tenant()
	if release, ok := p.tryShare(tag); ok {
		return release, nil
	}
	began := time.Now()
	release, err := p.acquire(ctx, d.o.Depth == 0, tag)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.New("subagent: cancelled before the task started")
		}
		return nil, err
	}
	emit(ctx, d.o.Emit, events.SubagentConcurrencyWaitData{TaskIndex: i, Waited: time.Since(began)})
	return release, nil
}

// safeDirName keeps a session or run id usable as one path element.
func safeDirName(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 || b.Len() > 128 {
		return "run-" + randomID()
	}
	return b.String()
}

// ClampRisk is the max_risk a task gets when the delegating run itself
// runs under max_risk ceiling: requested when there is no ceiling or it is
// no more severe than the ceiling, else the ceiling (an unset requested
// value, meaning "the operator policy", counts as above any ceiling). Pure.
func ClampRisk(requested, ceiling string) string {
	switch {
	case ceiling == "":
		return requested
	case requested == "" || tools.Severity(tools.Class(requested)) > tools.Severity(tools.Class(ceiling)):
		return ceiling
	}
	return requested
}

// GoalHash is the goal_sha256 of subagent_spawned: the first 8 bytes of
// the goal's SHA-256 in hex.
func GoalHash(goal string) string {
	s := sha256.Sum256([]byte(goal))
	return hex.EncodeToString(s[:8])
}

func (d *Delegate) runOne(ctx context.Context, ci agent.CallInfo, runDir string, i int, t TaskArg) outcome {
	out := outcome{index: i, taskID: fmt.Sprintf("t%d-%s", i+1, randomID())}
	fail := func(format string, a ...any) outcome {
		out.res = &Result{Status: StatusError, Error: fmt.Sprintf(format, a...)}
		return out
	}
	task := Task{
		TaskID: out.taskID, Goal: t.Goal, Context: t.Context, Guidance: t.Guidance, MaxRisk: ClampRisk(t.MaxRisk, d.o.MaxRisk),
		Model: d.o.Model, BaseURL: d.o.BaseURL, TimeoutSeconds: d.o.Settings.TaskTimeoutSeconds,
		Confine: d.o.Confine,
	}
	if d.o.ArtifactsDir != "" {
		root, err := makeArtifactRoot(d.o.ArtifactsDir, safeDirName(runDir), out.taskID)
		if err != nil {
			return fail("subagent: create the task's artifact root: %v", err)
		}
		task.ArtifactRoot = root
	}
	// Sharing needs odek's tracker (its limits and usage so far); another
	// agent.Budget is only charged with what the child spent, below.
	if tr, ok := ci.Budget.(*budget.Tracker); d.o.Settings.BudgetInherit == InheritShare && ok && tr != nil {
		l := tr.Limits()
		var elapsed time.Duration
		if dl, ok := tr.Deadline(); ok {
			elapsed = l.MaxRuntime - time.Until(dl)
		}
		task.Budget = Remaining(l, tr.Snapshot(), elapsed, !tr.CostCapInactive())
	}
	if d.o.TaskHook != nil {
		if why := d.o.TaskHook(ctx, TaskEvent{Start: true, TaskID: out.taskID, Goal: t.Goal}); why != "" {
			return fail("blocked by a subagent_start hook: %s", why)
		}
	}
	res, err := d.spawn(ctx, ci, i, task)
	if d.o.TaskHook != nil {
		ev := TaskEvent{TaskID: out.taskID, Goal: t.Goal, Result: res}
		if err != nil {
			ev.Result = &Result{Status: StatusError, Error: err.Error()}
		}
		d.o.TaskHook(context.WithoutCancel(ctx), ev)
	}
	if err != nil {
		return fail("%v", err)
	}
	out.res = res
	if ci.Budget != nil {
		// The parent's budget counts what the child spent; an exhausted
		// limit surfaces at the parent's next check.
		_ = ci.Budget.AddUsage(res.InputTokens, res.OutputTokens)
		if res.ToolCalls > 0 {
			_, _ = ci.Budget.ReserveToolCalls(res.ToolCalls)
		}
	}
	for _, dn := range res.Denials {
		emit(ctx, d.o.Emit, events.SubagentDeniedData{TaskIndex: i, Class: nonEmpty(dn.Class, "unknown"), Reason: nonEmpty(dn.Reason, "denied")})
	}
	if len(res.Artifacts) > 0 {
		out.refs, out.inline, out.artErr = d.acceptArtifacts(out.taskID, task.ArtifactRoot, res.Artifacts)
	}
	// Counts only when the child's own result carried them (a child the
	// parent had to kill reported nothing).
	emit(ctx, d.o.Emit, events.SubagentCompletedData{TaskID: out.taskID, Status: res.Status, Counted: res.fromChild,
		Iterations: res.Iterations, DurationSeconds: res.DurationSeconds, TokensUsed: res.TokensUsed, ArtifactCount: len(out.refs)})
	return out
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// childEnv is base without the API key variables and any inherited depth
// or slot directory, plus the child's depth and the process tree's slot
// directory (when there is one).
func childEnv(base []string, depth int, slots, tenant string) []string {
	out := make([]string, 0, len(base)+1)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "ODEK_API_KEY", "OPENAI_API_KEY", DepthEnv, SlotsEnv, TenantEnv:
			continue
		}
		out = append(out, kv)
	}
	if slots != "" {
		out = append(out, SlotsEnv+"="+slots)
	}
	if tenant != "" {
		out = append(out, TenantEnv+"="+tenant)
	}
	return append(out, DepthEnv+"="+strconv.Itoa(depth))
}

// spawn runs one child to its result.
func (d *Delegate) spawn(ctx context.Context, ci agent.CallInfo, i int, task Task) (*Result, error) {
	// telemetry (issue 24): one span per child; the child's `odek subagent`
	// continues it from TRACEPARENT, so its run joins this trace.
	ctx, span := telemetry.Start(ctx, "odek.subagent")
	defer span.End()
	if span.Recording() {
		span.String("odek.subagent.task_id", task.TaskID)
		span.Int("odek.subagent.depth", int64(d.o.Depth+1))
	}
	res, err := d.spawnChild(ctx, ci, i, task)
	if err != nil {
		span.Fail("spawn", err)
	} else if res != nil && res.Status != StatusSuccess {
		span.Fail(res.Status, nil)
	}
	return res, err
}

func (d *Delegate) spawnChild(ctx context.Context, ci agent.CallInfo, i int, task Task) (*Result, error) {
	exe := d.o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("subagent: find the odek executable: %v", err)
		}
	}
	tmp, err := unguessableDir(os.TempDir(), "odek-task-")
	if err != nil {
		return nil, fmt.Errorf("subagent: task file directory: %v", err)
	}
	defer os.RemoveAll(tmp)
	taskPath := filepath.Join(tmp, "task.json")
	body, _ := json.Marshal(task)
	if err := os.WriteFile(taskPath, body, 0o600); err != nil {
		return nil, fmt.Errorf("subagent: write task file: %v", err)
	}
	keyR, keyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("subagent: key pipe: %v", err)
	}
	// The key is tiny (well under the pipe buffer), so writing it before
	// the child starts cannot block.
	_, werr := keyW.WriteString(d.o.APIKey)
	keyW.Close()
	if werr != nil {
		keyR.Close()
		return nil, fmt.Errorf("subagent: key pipe: %v", werr)
	}

	timeout := time.Duration(task.TimeoutSeconds*float64(time.Second)) + d.killGrace
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(exe, "subagent", "--task", taskPath, "--api-key-fd", strconv.Itoa(APIKeyFD))
	cmd.Dir = d.o.WorkDir
	base := d.o.Environ
	if base == nil {
		base = os.Environ()
	}
	slots := ""
	if p, err := d.pool(); err == nil {
		slots = p.dir
	}
	cmd.Env = telemetry.WithEnv(ctx, childEnv(base, d.o.Depth+1, slots, d.tenant()))
	cmd.ExtraFiles = []*os.File{keyR}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitedBuffer{b: &stdout, max: MaxResultBytes}
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 64 << 10}
	// A process that left the child's group (setsid) may still hold its
	// stdout or stderr: once the child has exited, Wait stops copying after
	// pipeGrace instead of waiting for that process (until the task
	// timeout, and in killGroup forever).
	cmd.WaitDelay = pipeGrace
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		keyR.Close()
		return nil, fmt.Errorf("subagent: start child: %v", err)
	}
	keyR.Close()
	emit(ctx, d.o.Emit, events.SubagentSpawnedData{TaskID: task.TaskID, PID: cmd.Process.Pid, Depth: d.o.Depth + 1,
		TimeoutSeconds: int(task.TimeoutSeconds), GoalSHA256: GoalHash(task.Goal)})
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	var werr2 error
	select {
	case werr2 = <-waitErr:
		// The child is gone; anything it left in its group goes too, and
		// so do the jobs of its own jails, which a child killed before it
		// could close them leaves running (their cgroups are named by the
		// child's pid; sandbox.KillJobsOf).
		killGroup(cmd.Process.Pid, nil)
		sandbox.KillJobsOf(cmd.Process.Pid)
	case <-cctx.Done():
		killGroup(cmd.Process.Pid, waitErr)
		sandbox.KillJobsOf(cmd.Process.Pid)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("subagent: task %s cancelled: %w", task.TaskID, ctx.Err())
		}
		return &Result{Status: StatusError, TimedOut: true, Error: fmt.Sprintf("subagent: task %s did not finish within %gs; its processes were killed", task.TaskID, timeout.Seconds())}, nil
	}
	var res Result
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil || res.Status == "" {
		code := -1
		var ee *exec.ExitError
		if errors.As(werr2, &ee) {
			code = ee.ExitCode()
		}
		d.o.Logger.WithFields(logrus.Fields{"task_id": task.TaskID, "exit_code": code}).Warn("subagent printed no result: " + lastLine(stderr.String()))
		return &Result{Status: StatusError, Error: fmt.Sprintf("subagent: task %s exited with code %d without a valid result", task.TaskID, code)}, nil
	}
	res.fromChild = true
	return &res, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// limitedBuffer keeps the first max bytes and discards the rest, so a
// runaway child cannot exhaust the parent's memory.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// acceptArtifacts validates the child's refs fail closed against the
// task's own root, reads text artifacts of at most InlineMaxBytes for
// inlining and registers the others for artifact_read under
// "<task_id>/<id>".
func (d *Delegate) acceptArtifacts(taskID, root string, specs []artifacts.RefSpec) ([]artifacts.Ref, map[string]string, error) {
	if root == "" {
		return nil, nil, fmt.Errorf("%w: the child returned artifacts but no artifact root was set", ErrArtifacts)
	}
	for i := range specs {
		specs[i].ID = taskID + "/" + specs[i].ID
	}
	v := artifacts.Validator{Roots: []string{root}, MaxRefs: MaxArtifactsPerTask, MaxArtifactBytes: MaxArtifactBytes}
	refs, err := v.Validate(specs)
	if err != nil {
		return nil, nil, err
	}
	inline := make(map[string]string)
	for _, r := range refs {
		if r.SizeBytes <= InlineMaxBytes && artifactstore.IsText(r.MediaType) {
			if text, ok := readVerified(r); ok {
				inline[r.ID] = text
				continue
			}
		}
		if err := d.o.Store.Register(r); err != nil {
			return nil, nil, err
		}
	}
	return refs, inline, nil
}

// readVerified reads a small validated artifact and checks it is still a
// regular file (a symlink swapped in is not followed) of the validated
// size that hashes to the validated digest.
func readVerified(r artifacts.Ref) (string, bool) {
	f, err := artifacts.OpenNoFollow(r.Path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != r.SizeBytes {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, r.SizeBytes+1))
	if err != nil || int64(len(b)) != r.SizeBytes {
		return "", false
	}
	if r.SHA256 != "" {
		s := sha256.Sum256(b)
		if hex.EncodeToString(s[:]) != r.SHA256 {
			return "", false
		}
	}
	if !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// render builds the text the parent's model sees.
func (d *Delegate) render(outs []outcome) tools.Result {
	var b strings.Builder
	failed, artCount := 0, 0
	for k, o := range outs {
		if k > 0 {
			b.WriteString("\n\n")
		}
		r := o.res
		if r.Status != StatusSuccess {
			failed++
		}
		fmt.Fprintf(&b, "task %d (%s): %s", o.index+1, nonEmpty(o.taskID, "-"), r.Status)
		fmt.Fprintf(&b, " — %d iterations, %d tokens, %.1fs", r.Iterations, r.TokensUsed, r.DurationSeconds)
		if r.TimedOut {
			b.WriteString(", timed out")
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "\nerror: %s", artifacts.DisplayValue(r.Error, 500))
		}
		if r.Summary != "" {
			b.WriteString("\n")
			b.WriteString(artifacts.WrapUntrusted("subagent "+o.taskID, r.Summary))
		}
		for _, dn := range r.Denials {
			fmt.Fprintf(&b, "\ndenied: %s", artifacts.DisplayValue(dn.Reason, 300))
		}
		if o.artErr != nil {
			fmt.Fprintf(&b, "\nartifacts rejected (none accepted): %s", artifacts.DisplayValue(o.artErr.Error(), 400))
		}
		for _, ref := range o.refs {
			artCount++
			b.WriteString("\n")
			b.WriteString(ref.MetadataLine())
			if text, ok := o.inline[ref.ID]; ok {
				b.WriteString("\n")
				b.WriteString(artifacts.WrapUntrusted("artifact "+ref.ID, text))
			} else {
				b.WriteString(" (read with artifact_read)")
			}
		}
	}
	return tools.Result{Text: b.String(), IsError: failed == len(outs), ArtifactCount: artCount}
}
