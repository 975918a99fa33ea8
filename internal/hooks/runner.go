package hooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/mcpclient"
	"github.com/sirupsen/logrus"
)

// InputSchema names the JSON document a hook receives.
const InputSchema = "odek.hook/v1"

// Input is what a hook receives (JSON on a command's stdin, the body of
// an HTTP hook's POST). Fields that do not apply to the event are
// omitted.
type Input struct {
	Schema    string `json:"schema"`
	Event     Event  `json:"event"`
	RunID     string `json:"run_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	// Tool is set for pre_tool and post_tool.
	Tool *ToolInput `json:"tool,omitempty"`
	// Result is set for post_tool.
	Result *ResultInput `json:"result,omitempty"`
	// Prompt is the goal (user_prompt, session_start, subagent_start).
	Prompt string `json:"prompt,omitempty"`
	// Answer is the final answer (stop, subagent_stop); Status how the
	// run ended (session_end, subagent_stop).
	Answer string `json:"answer,omitempty"`
	Status string `json:"status,omitempty"`
	// TaskID names the delegated task (subagent_start, subagent_stop).
	TaskID string `json:"task_id,omitempty"`
}

// ToolInput describes the call.
type ToolInput struct {
	Name      string          `json:"name"`
	Class     string          `json:"class,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ResultInput is a post_tool call's result.
type ResultInput struct {
	Text      string `json:"text"`
	IsError   bool   `json:"is_error"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Outcome of one hook invocation.
type Outcome string

// Outcomes.
const (
	OutcomeOK      Outcome = "ok"
	OutcomeBlocked Outcome = "blocked"
	OutcomeFailed  Outcome = "failed" // error, bad exit code, timeout
)

// Decision is what the hooks of one event decided.
type Decision struct {
	// Block is set when a hook blocked (exit 2, or an HTTP hook's
	// "decision":"block"), or when a pre_tool hook failed (fail closed).
	Block bool
	// Reason is shown to the model (bounded, redacted).
	Reason string
}

// Report is one invocation's record (the hook_* events, logs).
type Report struct {
	Event    Event
	Hook     string
	Outcome  Outcome
	Reason   string // blocked: the reason; failed: the error
	Duration time.Duration
	// FailClosed is set for a failed pre_tool hook: the call was blocked.
	FailClosed bool
}

// Options configure a Runner.
type Options struct {
	// Environ is the base of a command hook's environment; every
	// secret-looking name (redact.IsSecretEnvName) is removed. nil ⇒
	// os.Environ().
	Environ []string
	// Dir is a command hook's working directory ("" ⇒ odek's).
	Dir string
	// Start, when set, starts each command hook (the job's sandbox, so a
	// hook is confined like the job's shell). nil ⇒ exec.Cmd.Start.
	Start func(*exec.Cmd) error
	// HTTPClient carries HTTP hooks; nil ⇒ TLS verified (1.2+), no
	// redirects followed.
	HTTPClient *http.Client
	// Redactor masks secrets in reasons and reports; nil ⇒ none.
	Redactor *redact.Redactor
	// Logger receives every failed hook; nil ⇒ discarded.
	Logger logrus.FieldLogger
}

// Runner runs the configured hooks. Safe for concurrent use.
type Runner struct {
	cfg *Config
	o   Options
	env []string
}

// NewRunner is a Runner of cfg (nil ⇒ a Runner that runs nothing).
func NewRunner(cfg *Config, o Options) *Runner {
	if cfg == nil || len(cfg.Hooks) == 0 {
		// Nothing will run (every use is behind Has): no environment
		// to filter, no HTTP client to make. Most runs have no hooks,
		// and cloning http.DefaultTransport set HTTP/2 up on it.
		return &Runner{cfg: cfg, o: o}
	}
	base := o.Environ
	if base == nil {
		base = os.Environ()
	}
	env, _ := mcpclient.FilterEnv(base, nil, redact.IsSecretEnvName)
	if o.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		o.HTTPClient = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		}}
	}
	if o.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Logger = l
	}
	return &Runner{cfg: cfg, o: o, env: env}
}

// Has reports whether hooks are configured for ev.
func (r *Runner) Has(ev Event) bool { return r != nil && r.cfg.Has(ev) }

// Fire runs ev's hooks that match in in config order until one blocks,
// and returns the decision and one Report per hook run. A pre_tool hook
// that fails (cannot start, exits other than 0 or 2, times out, answers
// an HTTP error) blocks: fail closed. Any other event's failing hook is
// logged and the run goes on: fail open. A blocking answer of a hook of
// an event that cannot block (post_tool, stop, session_end,
// subagent_stop) is reported, not enforced.
func (r *Runner) Fire(ctx context.Context, in Input) (Decision, []Report) {
	if !r.Has(in.Event) {
		return Decision{}, nil
	}
	in.Schema = InputSchema
	r.redactInput(&in)
	body := r.encode(in)
	var reps []Report
	for i := range r.cfg.Hooks[in.Event] {
		h := &r.cfg.Hooks[in.Event][i]
		if in.Tool != nil && !h.Matches(in.Tool.Name, in.Tool.Class) {
			continue
		}
		start := time.Now()
		var rep Report
		if len(h.Command) > 0 {
			rep = r.runCommand(ctx, h, in.Event, body)
		} else {
			rep = r.runHTTP(ctx, h, in.Event, body)
		}
		rep.Event, rep.Hook, rep.Duration = in.Event, h.Name(), time.Since(start)
		rep.Reason = r.clean(rep.Reason)
		if rep.Outcome == OutcomeFailed {
			rep.FailClosed = in.Event == PreTool
			r.o.Logger.WithFields(logrus.Fields{"hook": rep.Hook, "event": string(in.Event), "fail_closed": rep.FailClosed}).Warn("hook failed: " + rep.Reason)
		}
		reps = append(reps, rep)
		switch {
		case rep.Outcome == OutcomeBlocked && canBlock(in.Event):
			return Decision{Block: true, Reason: rep.Reason}, reps
		case rep.FailClosed:
			return Decision{Block: true, Reason: "a pre_tool hook (" + rep.Hook + ") failed, so the call is blocked: " + rep.Reason}, reps
		}
	}
	return Decision{}, reps
}

// redactInput passes every text of in through the run's redactor: a hook,
// above all an HTTP one, is an output path like the event stream. Masked
// arguments that stop being JSON are left out.
func (r *Runner) redactInput(in *Input) {
	red := r.o.Redactor
	if red == nil {
		return
	}
	in.Prompt, in.Answer = red.String(in.Prompt), red.String(in.Answer)
	if in.Tool != nil && len(in.Tool.Arguments) > 0 {
		t := *in.Tool
		t.Arguments = json.RawMessage(red.String(string(t.Arguments)))
		if !json.Valid(t.Arguments) {
			t.Arguments = nil
		}
		in.Tool = &t
	}
	if in.Result != nil {
		res := *in.Result
		res.Text = red.String(res.Text)
		in.Result = &res
	}
}

func canBlock(ev Event) bool {
	return ev == PreTool || ev == UserPrompt || ev == SessionStart || ev == SubagentStart
}

// encode marshals in within MaxInputBytes (clipping a long result).
func (r *Runner) encode(in Input) []byte {
	b, _ := json.Marshal(in)
	if len(b) > MaxInputBytes && in.Result != nil {
		cut := len(in.Result.Text) - (len(b) - MaxInputBytes) - 64
		in.Result.Text = clip(in.Result.Text, max(cut, 0))
		in.Result.Truncated = true
		b, _ = json.Marshal(in)
	}
	if len(b) > MaxInputBytes && in.Tool != nil {
		in.Tool.Arguments = json.RawMessage(`{"odek_note":"arguments larger than the hook input limit"}`)
		b, _ = json.Marshal(in)
	}
	return b
}

func (r *Runner) clean(s string) string {
	s = strings.TrimSpace(s)
	if r.o.Redactor != nil {
		s = r.o.Redactor.String(s)
	}
	return clip(s, MaxReasonChars)
}

// limitBuffer keeps the first MaxOutputBytes written to it.
type limitBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	cut bool
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := MaxOutputBytes - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	if l.b.Len()+len(p) > MaxOutputBytes {
		l.cut = true
	}
	return len(p), nil
}

func (l *limitBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runCommand runs one command hook: JSON on stdin, its own process group
// (killed whole at the timeout), the secret-stripped environment plus
// ODEK_HOOK_EVENT, stdout and stderr bounded.
func (r *Runner) runCommand(ctx context.Context, h *Hook, ev Event, body []byte) Report {
	cmd := exec.Command(h.Command[0], h.Command[1:]...)
	cmd.Env = append(append([]string(nil), r.env...), "ODEK_HOOK_EVENT="+string(ev))
	cmd.Dir = r.o.Dir
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr limitBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	newProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	start := cmd.Start
	if r.o.Start != nil {
		start = func() error { return r.o.Start(cmd) }
	}
	if err := start(); err != nil {
		return Report{Outcome: OutcomeFailed, Reason: "cannot start: " + err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	var err error
	var why string
	select {
	case err = <-done:
	case <-timer.C:
		why = fmt.Sprintf("timed out after %v (timeout_seconds)", h.timeout)
	case <-ctx.Done():
		why = "cancelled: " + ctx.Err().Error()
	}
	if why != "" {
		killProcessGroup(cmd)
		<-done
		return Report{Outcome: OutcomeFailed, Reason: why}
	}
	if err == nil {
		return Report{Outcome: OutcomeOK}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		reason := strings.TrimSpace(stderr.String())
		if reason == "" {
			reason = "blocked by a hook (it gave no reason on stderr)"
		}
		return Report{Outcome: OutcomeBlocked, Reason: reason}
	}
	msg := err.Error()
	if s := strings.TrimSpace(stderr.String()); s != "" {
		msg += ": " + clip(s, 500)
	}
	return Report{Outcome: OutcomeFailed, Reason: msg}
}

// runHTTP POSTs the input; a 2xx answer whose JSON says
// {"decision":"block","reason":…} blocks, any other 2xx allows, anything
// else (or no answer in time) is a failure.
func (r *Runner) runHTTP(ctx context.Context, h *Hook, ev Event, body []byte) Report {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return Report{Outcome: OutcomeFailed, Reason: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Odek-Hook-Event", string(ev))
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	resp, err := r.o.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Report{Outcome: OutcomeFailed, Reason: fmt.Sprintf("no answer within %v (timeout_seconds)", h.timeout)}
		}
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap()
		}
		return Report{Outcome: OutcomeFailed, Reason: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxOutputBytes))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Report{Outcome: OutcomeFailed, Reason: fmt.Sprintf("answered HTTP %d", resp.StatusCode)}
	}
	var d struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if json.Unmarshal(b, &d) == nil && d.Decision == "block" {
		if d.Reason == "" {
			d.Reason = "blocked by a hook (it gave no reason)"
		}
		return Report{Outcome: OutcomeBlocked, Reason: d.Reason}
	}
	return Report{Outcome: OutcomeOK}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
