package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/sandbox"
)

// Options configures the built-in tools. The zero value is usable.
type Options struct {
	// WorkDir is the root for relative paths and the shell's working
	// directory. "" means the process working directory at construction.
	WorkDir string
	// ShellTimeout is the shell timeout when the call names none. 0 means
	// 120s.
	ShellTimeout time.Duration
	// MaxShellTimeout is the largest timeout_seconds a call may ask for.
	// 0 means 10m.
	MaxShellTimeout time.Duration
	// MaxStreamBytes caps each of a shell command's stdout and stderr, in
	// bytes; the head and tail are kept and the rest counted. 0 means
	// 1 MiB.
	MaxStreamBytes int
	// MaxReadBytes caps the text read_file returns, in bytes. 0 means
	// 256 KiB.
	MaxReadBytes int
	// MaxSearchMatches is search_files' default and maximum match count.
	// 0 means 200; values above 2000 mean 2000.
	MaxSearchMatches int
	// Env is the shell's environment as KEY=value entries. nil means the
	// process environment minus variables whose names look secret
	// (redact.IsSecretName), REDIS_URL and any whose value is a URL with
	// credentials; an empty non-nil slice means no variables.
	// A sandboxed shell keeps only a few of them (sandbox.Env).
	Env []string
	// Confine keeps the file tools inside WorkDir: they open paths through
	// an os.Root there, so `..`, absolute paths elsewhere, `~` and
	// symlinks that leave it (and every absolute symlink, which os.Root
	// cannot tell from one that leaves) fail with an *OutsideRootError. false means
	// any path the process can reach.
	Confine bool
	// Sandbox, when set, starts every shell command in this jail (package
	// sandbox: Landlock and seccomp); its root should be WorkDir. The
	// caller owns and closes it. nil means an unconfined shell.
	Sandbox *sandbox.Jail
}

// Defaults and hard limits of Options.
const (
	DefaultShellTimeout     = 120 * time.Second
	DefaultMaxShellTimeout  = 10 * time.Minute
	DefaultMaxStreamBytes   = 1 << 20
	DefaultMaxReadBytes     = 256 << 10
	DefaultMaxSearchMatches = 200
	HardMaxSearchMatches    = 2000
)

// config is Options with defaults applied.
type config struct {
	workDir          string
	shellTimeout     time.Duration
	maxShellTimeout  time.Duration
	maxStreamBytes   int
	maxReadBytes     int
	maxSearchMatches int
	// The read limits, in bytes: the constants of the same names, kept
	// here so tests can lower them.
	maxScanBytes   int64
	maxPatchBytes  int64
	maxSearchBytes int64
	maxDirEntries  int
	env            []string
	confine        bool
	sandbox        *sandbox.Jail
	// gate orders the run's writing calls around lines that run git
	// (gitline.go).
	gate gitGate
}

func newConfig(o Options) *config {
	c := &config{
		workDir:          o.WorkDir,
		shellTimeout:     o.ShellTimeout,
		maxShellTimeout:  o.MaxShellTimeout,
		maxStreamBytes:   o.MaxStreamBytes,
		maxReadBytes:     o.MaxReadBytes,
		maxSearchMatches: o.MaxSearchMatches,
		maxScanBytes:     MaxReadScanBytes,
		maxPatchBytes:    MaxPatchBytes,
		maxSearchBytes:   MaxSearchBytes,
		maxDirEntries:    MaxDirEntries,
		env:              o.Env,
		confine:          o.Confine,
		sandbox:          o.Sandbox,
	}
	if c.workDir == "" {
		if wd, err := os.Getwd(); err == nil {
			c.workDir = wd
		} else {
			c.workDir = "."
		}
	}
	if abs, err := filepath.Abs(c.workDir); err == nil {
		c.workDir = abs
	}
	if c.shellTimeout <= 0 {
		c.shellTimeout = DefaultShellTimeout
	}
	if c.maxShellTimeout <= 0 {
		c.maxShellTimeout = DefaultMaxShellTimeout
	}
	if c.shellTimeout > c.maxShellTimeout {
		c.shellTimeout = c.maxShellTimeout
	}
	if c.maxStreamBytes <= 0 {
		c.maxStreamBytes = DefaultMaxStreamBytes
	}
	if c.maxReadBytes <= 0 {
		c.maxReadBytes = DefaultMaxReadBytes
	}
	if c.maxSearchMatches <= 0 {
		c.maxSearchMatches = DefaultMaxSearchMatches
	}
	if c.maxSearchMatches > HardMaxSearchMatches {
		c.maxSearchMatches = HardMaxSearchMatches
	}
	if c.env == nil {
		c.env = filterEnv(os.Environ())
	}
	if c.sandbox != nil {
		c.env = sandbox.Env(c.sandbox.Spec(), c.env)
	}
	// git in a shell command runs with the guard (gitguard.go): programs a
	// repository's files name do not run on everyday git commands. Built
	// once here, not per call.
	c.env = withGitGuard(c.env)
	if c.confine || c.sandbox != nil {
		// A confined job's git finds no repository above its working
		// directory (gitline.go: gitCeiling).
		c.env = gitCeiling(c.env, c.workDir)
	}
	return c
}

// filterEnv drops variables whose names look like they hold secrets,
// REDIS_URL (the queue every chat's jobs, sessions and approvals go
// through) and every variable whose value is a URL carrying credentials
// (scheme://user:password@host), wherever the name puts it.
func filterEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !redact.IsSecretName(name) && name != "REDIS_URL" && !urlWithCredentials(value) {
			out = append(out, kv)
		}
	}
	return out
}

// urlWithCredentials reports whether v holds "://" followed by an
// authority with userinfo ("user@", "user:password@", ":password@"), as
// in redis://:pw@redis:6379 or https://token@host. Pure.
func urlWithCredentials(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		v = v[i+3:]
		end := strings.IndexAny(v, "/?# \t\n")
		if end < 0 {
			end = len(v)
		}
		if strings.Contains(v[:end], "@") {
			return true
		}
	}
}

// Builtins returns the built-in tools configured by opts: read_file,
// write_file, list_dir, search_files, patch and shell, in that order.
func Builtins(opts Options) []Tool {
	c := newConfig(opts)
	return []Tool{
		&readFileTool{c}, &writeFileTool{c}, &listDirTool{c},
		&searchFilesTool{c}, &patchTool{c}, &shellTool{c: c},
	}
}

// resolve turns a tool path argument into an absolute, cleaned path.
func (c *config) resolve(p string) string {
	if p == "" {
		p = "."
	}
	if strings.HasPrefix(p, "~/") || p == "~" {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.workDir, p)
	}
	return filepath.Clean(p)
}

// display returns p relative to the working directory when it is inside
// it, else p.
func (c *config) display(abs string) string {
	if rel, err := filepath.Rel(c.workDir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return filepath.ToSlash(rel)
	}
	return abs
}

// inside reports whether abs, with symlinks in its existing part resolved,
// lies inside the working directory. It fails closed: anything it cannot
// resolve counts as outside.
func (c *config) inside(abs string) bool {
	if !within(c.workDir, abs) {
		return false
	}
	root, err := filepath.EvalSymlinks(c.workDir)
	if err != nil {
		return false
	}
	// Resolve the longest existing prefix of abs.
	p, rest := abs, ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return within(root, filepath.Join(r, rest))
		}
		if !errors.Is(err, os.ErrNotExist) {
			return false
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether p equals root or lies below it, lexically.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// argError is an invalid argument, shown to the model as an error result.
type argError struct {
	tool, field, msg string
}

func (e *argError) Error() string {
	return fmt.Sprintf("%s: invalid argument %q: %s", e.tool, e.field, e.msg)
}

// decodeArgs unmarshals args into dst (a struct of pointer fields) and
// turns type errors into errors naming the field. Empty args mean {}.
func decodeArgs(tool string, args json.RawMessage, dst any) error {
	if len(args) == 0 {
		return nil
	}
	if err := json.Unmarshal(args, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				return &argError{tool, "(arguments)", "must be a JSON object, got " + te.Value}
			}
			return &argError{tool, field, fmt.Sprintf("must be %s, got %s", kindName(te.Type.String()), te.Value)}
		}
		return &argError{tool, "(arguments)", "not valid JSON: " + err.Error()}
	}
	return nil
}

func kindName(goType string) string {
	switch goType {
	case "string":
		return "a string"
	case "int":
		return "an integer"
	case "bool":
		return "a boolean"
	case "float64":
		return "a number"
	}
	return goType
}

// errResult renders err as an error result.
func errResult(err error) Result {
	return Result{Text: err.Error(), IsError: true}
}

// invalidJSON is Assess's error for arguments that are not a JSON object.
func invalidJSON(tool string, args json.RawMessage) error {
	if len(args) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidArgs, tool, err)
	}
	return nil
}

// ErrInvalidArgs is returned by Assess for arguments that are not a JSON
// object.
var ErrInvalidArgs = errors.New("tools: invalid tool arguments")

// pathSummary is the audit summary of a path tool.
func pathSummary(p string, c Class) Assessment {
	return Assessment{Class: c, Summary: map[string]any{"path": p, "class": string(c)}}
}

// schema builds a JSON Schema object from property lines.
func schema(required []string, props string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}
