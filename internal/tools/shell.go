package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/internal/clip"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/telemetry"
)

// shellWaitDelay bounds how long Wait waits for the output pipes after the
// shell exited or was killed (a background grandchild may hold them).
const shellWaitDelay = 2 * time.Second

type shellTool struct {
	c *config
	// rated holds, per command line, the class Assess gave it while a
	// Run of it may follow: Run reads the repositories git would use
	// again, and refuses a line rated below code_execution whose
	// repository has since come to name a program (gitrepo.go).
	rated sync.Map // string → *ratedLine
}

// ratedLine counts the assessments of one command line below
// code_execution that no Run has consumed yet.
type ratedLine struct {
	mu sync.Mutex
	n  int
}

type shellArgs struct {
	Command        *string  `json:"command"`
	TimeoutSeconds *float64 `json:"timeout_seconds"`
}

func (t *shellTool) Definition() Definition {
	return Definition{
		Name: "shell",
		Description: fmt.Sprintf("Run a command with sh -c in the working directory. Returns the exit code, stdout and stderr "+
			"(each capped at %d bytes, head and tail kept). Non-zero exit is an error. Default timeout %s, max %s.%s",
			t.c.maxStreamBytes, t.c.shellTimeout, t.c.maxShellTimeout, sandboxNote(t.c.sandbox)),
		Parameters: schema([]string{"command"}, `"command":{"type":"string","description":"Shell command line"},`+
			`"timeout_seconds":{"type":"number","exclusiveMinimum":0,"description":"Kill the command after this many seconds"}`),
	}
}

func (t *shellTool) Assess(args json.RawMessage) (Assessment, error) {
	if err := invalidJSON("shell", args); err != nil {
		return Assessment{}, err
	}
	var a shellArgs
	_ = decodeArgs("shell", args, &a)
	g := &gitUse{}
	v := classifyLine(deref(a.Command), t.c.workDir, 0, g)
	// A git command is rated by the repositories it may use too: their
	// configuration can name programs git runs (gitrepo.go). A confined
	// job's HOME is its temp dir, whose global configuration it writes.
	home := ""
	if t.c.sandbox != nil {
		home = t.c.sandbox.Spec().TempDir
	}
	before := v
	v = t.c.gitVerdict(v, g, home)
	if len(g.dirs) > 0 && Severity(v.Class) < Severity(ClassCodeExecution) {
		r, _ := t.rated.LoadOrStore(deref(a.Command), &ratedLine{})
		rl := r.(*ratedLine)
		rl.mu.Lock()
		rl.n++
		rl.mu.Unlock()
	}
	summary := map[string]any{"argv0": v.Argv0, "class": string(v.Class)}
	if v != before {
		// The question names what git would run (a driver the chat
		// cannot see in the command line).
		summary["git"] = v.Reason
	}
	// The approval question shows the command line (never the events):
	// a person approves what runs, not only its first word.
	ask := map[string]string{"command": clipCommand(deref(a.Command), 500)}
	return Assessment{Class: v.Class, Summary: summary, Ask: ask}, nil
}

// clipCommand is cmd on one line, at most max bytes (cut at a rune).
func clipCommand(cmd string, max int) string {
	cmd = strings.Join(strings.Fields(cmd), " ")
	if len(cmd) <= max {
		return cmd
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(cmd[cut]) {
		cut--
	}
	return cmd[:cut] + "…"
}

func (t *shellTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	var a shellArgs
	if err := decodeArgs("shell", args, &a); err != nil {
		return errResult(err), nil
	}
	if a.Command == nil || strings.TrimSpace(*a.Command) == "" {
		return errResult(&argError{"shell", "command", "required"}), nil
	}
	// A line that runs git runs alone among the run's writing calls, from
	// its second reading of the repositories to its end (gitline.go).
	release, err := t.c.gate.lock(ctx, runsGit(*a.Command, t.c.workDir))
	if err != nil {
		return errResult(fmt.Errorf("shell: not run: %w", err)), err
	}
	defer release()
	if why := t.recheckGit(*a.Command); why != "" {
		return errResult(fmt.Errorf("shell: not run: %s since the command was rated (no approval covers it); run it again to be asked", why)), nil
	}
	timeout := t.c.shellTimeout
	if a.TimeoutSeconds != nil {
		s := *a.TimeoutSeconds
		maxS := t.c.maxShellTimeout.Seconds()
		if !(s > 0) || math.IsInf(s, 0) || s > maxS {
			return errResult(&argError{"shell", "timeout_seconds", fmt.Sprintf("must be > 0 and <= %g (the configured maximum), got %g", maxS, s)}), nil
		}
		timeout = time.Duration(s * float64(time.Second))
	}
	return t.c.runShell(ctx, *a.Command, timeout)
}

// recheckGit reads the repositories of a command line Assess rated
// below code_execution again, right before it runs, and returns why it
// may not run when one of them now names a program (a parallel tool call
// or a process left running wrote it after the rating); "" otherwise,
// and for lines not rated that way.
func (t *shellTool) recheckGit(command string) string {
	r, ok := t.rated.Load(command)
	if !ok {
		return ""
	}
	rl := r.(*ratedLine)
	rl.mu.Lock()
	if rl.n == 0 {
		rl.mu.Unlock()
		return ""
	}
	rl.n--
	rl.mu.Unlock()
	g := &gitUse{}
	v := classifyLine(command, t.c.workDir, 0, g)
	home := ""
	if t.c.sandbox != nil {
		home = t.c.sandbox.Spec().TempDir
	}
	if after := t.c.gitVerdict(v, g, home); after != v && Severity(after.Class) >= Severity(ClassCodeExecution) {
		return after.Reason
	}
	return ""
}

// sandboxNote tells the model what a confined shell can reach, so a
// refused access reads as policy rather than a fault to work around.
func sandboxNote(j *sandbox.Jail) string {
	if j == nil {
		return ""
	}
	s := j.Spec()
	net := "no network connections"
	if len(s.ConnectPorts) > 0 {
		ports := make([]string, len(s.ConnectPorts))
		for i, p := range s.ConnectPorts {
			ports[i] = strconv.Itoa(int(p))
		}
		net = "network connections only to TCP ports " + strings.Join(ports, ", ")
	}
	return " The command runs in a sandbox: it can write only in the working directory and $TMPDIR, read system files (/usr, /etc, …) but not /proc or other users' files, and has " + net +
		" (TCP/UDP over IPv4/IPv6 only: no Unix, raw or netlink sockets, no TCP Fast Open" + listenNote(s) + "). Each process is limited in memory, CPU time and file size, the whole job (where the host has per-job cgroups) in memory, CPU time and processes, and every process it leaves running ends with this job."
}

func listenNote(s sandbox.Spec) string {
	if len(s.BindPorts) == 0 {
		return ", no listening"
	}
	ports := make([]string, len(s.BindPorts))
	for i, p := range s.BindPorts {
		ports[i] = strconv.Itoa(int(p))
	}
	return ", listening only on TCP ports " + strings.Join(ports, ", ")
}

// runShell runs command in its own session and process group and kills
// the whole group on timeout or cancellation (on Windows, which has no process
// groups, only the shell itself; see shell_other.go).
func (c *config) runShell(ctx context.Context, command string, timeout time.Duration) (Result, error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, "sh", "-c", command)
	cmd.Dir = c.workDir
	cmd.Env = c.env // with the git guard (newConfig)
	if telemetry.Carried(ctx) {
		// telemetry (issue 24): the command continues the run's trace
		// (TRACEPARENT/TRACESTATE); nothing is copied while none is carried.
		cmd.Env = telemetry.WithEnv(ctx, c.env)
	}
	killGroupOnCancel(cmd)
	cmd.WaitDelay = shellWaitDelay
	stdout := newStreamCap(c.maxStreamBytes)
	stderr := newStreamCap(c.maxStreamBytes)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	var err error
	var exitErr *exec.ExitError
	// ended: the command ran to an end, with status ws and code.
	var ended, signaled bool
	var code int
	var sig syscall.Signal
	if c.sandbox != nil {
		// Through the job's supervisor where it runs (one confined
		// process per job forks every command), else the helper per
		// command; both kill the command's process group on tctx.
		var ws syscall.WaitStatus
		ws, err = c.sandbox.Run(tctx, cmd)
		if ended = err == nil || errors.Is(err, exec.ErrWaitDelay); ended {
			code, signaled = ws.ExitStatus(), ws.Signaled()
			if signaled {
				sig, code = ws.Signal(), -1
			}
		}
	} else {
		err = cmd.Run()
		switch {
		case err == nil:
			ended = true
		case errors.As(err, &exitErr):
			ended, err, code = true, nil, exitErr.ExitCode()
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				signaled, sig = true, ws.Signal()
			}
		case errors.Is(err, exec.ErrWaitDelay):
			ended, code = true, cmd.ProcessState.ExitCode()
		}
	}
	elapsed := time.Since(start)

	var b strings.Builder
	res := Result{}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(&b, "command cancelled after %s; process group killed\n", elapsed.Round(time.Millisecond))
		res.IsError = true
	case tctx.Err() != nil:
		fmt.Fprintf(&b, "command timed out after %s (timeout_seconds limit %g); process group killed\n", timeout, timeout.Seconds())
		res.IsError = true
	case ended && errors.Is(err, exec.ErrWaitDelay):
		// The shell exited but a background process kept the output open.
		fmt.Fprintf(&b, "exit code: %d (output closed after %s: a background process kept it open)\n", code, shellWaitDelay)
		res.IsError = code != 0
	case ended && signaled:
		fmt.Fprintf(&b, "killed by signal: %s\n", sig)
		res.IsError = true
	case ended:
		fmt.Fprintf(&b, "exit code: %d\n", code)
		res.IsError = code != 0
	default:
		fmt.Fprintf(&b, "failed to run: %v\n", err)
		res.IsError = true
	}
	writeStream(&b, "stdout", stdout)
	writeStream(&b, "stderr", stderr)
	res.Text = b.String()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func writeStream(b *strings.Builder, name string, s *streamCap) {
	if s.total == 0 {
		fmt.Fprintf(b, "%s: (empty)\n", name)
		return
	}
	fmt.Fprintf(b, "%s:\n", name)
	b.WriteString(s.String())
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
}

// streamCap keeps the first and last max/2 bytes written to it and counts
// the rest. Writes never fail, so the child keeps draining. One goroutine
// writes at a time (os/exec copies each stream in its own goroutine);
// String must be called after the writer finished.
type streamCap struct {
	headMax, tailMax int
	head             []byte
	tail             []byte // ring buffer once full
	tailPos          int    // next write position in a full ring
	total            int64
}

func newStreamCap(max int) *streamCap {
	return &streamCap{headMax: max / 2, tailMax: max - max/2}
}

func (s *streamCap) Write(p []byte) (int, error) {
	n := len(p)
	s.total += int64(n)
	if room := s.headMax - len(s.head); room > 0 {
		k := min(room, len(p))
		s.head = append(s.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || s.tailMax == 0 {
		return n, nil
	}
	if len(p) >= s.tailMax {
		s.tail = append(s.tail[:0], p[len(p)-s.tailMax:]...)
		s.tailPos = 0
		return n, nil
	}
	if room := s.tailMax - len(s.tail); room > 0 {
		k := min(room, len(p))
		s.tail = append(s.tail, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(s.tail[s.tailPos:], p)
		p = p[k:]
		s.tailPos = (s.tailPos + k) % s.tailMax
	}
	return n, nil
}

// dropped is the number of bytes neither in head nor tail.
func (s *streamCap) dropped() int64 {
	return s.total - int64(len(s.head)) - int64(len(s.tail))
}

func (s *streamCap) String() string {
	var tail []byte
	if len(s.tail) == s.tailMax && s.tailPos > 0 {
		tail = append(append(tail, s.tail[s.tailPos:]...), s.tail[:s.tailPos]...)
	} else {
		tail = s.tail
	}
	if d := s.dropped(); d > 0 {
		t := string(tail)
		skip := clip.RuneStartAfter(t, 0)
		return string(s.head) + "\n[... " + strconv.FormatInt(d+int64(skip), 10) + " bytes dropped ...]\n" + t[skip:]
	}
	return string(s.head) + string(tail)
}
