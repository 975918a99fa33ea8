package config

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Every environment variable odek and odek-bot read is declared once, with
// its doc line, in one of the tagged structs of this package (env.go,
// environ.go, botenv.go; tracing's in internal/telemetry): `odek config
// env` and `odek-bot --help` are rendered from the tags (EnvText), flags
// that stand for a variable take their help from it (EnvUsage), the structs
// are filled by ReadEnv, and a value that does not parse is an error naming
// the variable (never silently the default). Variables both the bot and
// the worker read are SharedEnv, embedded in both.

// Seconds is a duration read from the environment as a Go duration ("90s",
// "5m") or a plain number of seconds ("90").
type Seconds time.Duration

// SetValue parses v (ParseSeconds); ReadEnv calls it.
func (s *Seconds) SetValue(v string) error {
	d, err := ParseSeconds(v)
	*s = Seconds(d)
	return err
}

// D is the duration.
func (s Seconds) D() time.Duration { return time.Duration(s) }

// ParseSeconds accepts a Go duration ("90s", "5m") or a plain number of
// seconds; negative values are errors.
func ParseSeconds(v string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("must be ≥ 0, got %v", v)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration like 90s or 5m, got %q", v)
	}
	return d, nil
}

// ProcessEnv are the variables every odek command reads beside the
// configuration layers (EnvVars).
type ProcessEnv struct {
	// ApproveMCP grants every extension server and tool for this
	// invocation without asking or saving.
	ApproveMCP bool `env:"ODEK_APPROVE_MCP" env-description:"1 approves every MCP extension server and tool for this invocation, without asking and without saving the answer (CI, containers)"`
	// SubagentDepth is set by odek for the sub-agents it starts.
	SubagentDepth string `env:"ODEK_SUBAGENT_DEPTH" env-description:"set by odek for the sub-agents it starts (their nesting depth); not for users"`
}

// SharedEnv are the variables odek-bot and `odek worker` (and the `odek
// queue` commands) both read, declared once: WorkerEnv and BotEnv embed
// it, and `odek config env` lists it as a group of its own.
type SharedEnv struct {
	RedisURL        string  `env:"REDIS_URL" env-description:"URL of the job queue: redis://, rediss://, redis+sentinel://host:port,.../master, redis+cluster://host:port,... (see docs/DEPLOY.md); required by odek worker and odek queue; for odek-bot, empty = embedded mode (in-process queue and workers)"`
	QueuePrefix     string  `env:"ODEK_QUEUE_PREFIX" env-default:"odek:" env-description:"key prefix of the queue and sessions, the same for the bot and its workers"`
	ArtifactsDir    string  `env:"ODEK_ARTIFACTS_DIR" env-description:"directory the bot and its workers share; each chat works in <dir>/<chat id>, whose files a job reports as artifacts and /artifact sends (empty: workers use $ODEK_HOME/chats and report none, /artifact is off)"`
	ApprovalTimeout Seconds `env:"ODEK_APPROVAL_TIMEOUT" env-default:"1800" env-description:"seconds (or a duration like 5m) a tool approval waits for the chat before denying (workers, and odek-bot's embedded workers)"`
	Models          string  `env:"ODEK_TELEGRAM_MODELS" env-description:"comma-separated models users may choose per chat with /model; a worker runs only a listed model, and the configured one for a job asking for another (empty = no choice)"`
	LogLevel        string  `env:"ODEK_LOG_LEVEL" env-default:"info" env-description:"debug, info, warn or error"`
}

// WorkerEnv are the variables of `odek worker` and the `odek queue`
// commands beside SharedEnv; each is also a flag, which wins (the flag's
// help is EnvUsage of the variable).
type WorkerEnv struct {
	SharedEnv
	Lease           Seconds `env:"ODEK_QUEUE_LEASE" env-default:"30s" env-description:"lease of a claimed job without heartbeat before another worker takes it over (stored in the queue by the first worker)"`
	MaxAttempts     int     `env:"ODEK_QUEUE_MAX_ATTEMPTS" env-default:"3" env-description:"deaths of a job's worker, while the job ran alone, before it is dead-lettered (stored in the queue by the first worker; odek-bot's embedded store reads it too)"`
	Concurrency     int     `env:"ODEK_WORKER_CONCURRENCY" env-default:"4" env-description:"jobs one worker runs at once"`
	Name            string  `env:"ODEK_WORKER_NAME" env-description:"consumer name, unique per worker (default host-pid-random)"`
	MetricsAddr     string  `env:"ODEK_WORKER_METRICS_ADDR" env-description:"serve /healthz and /metrics on this address, e.g. :9464 (empty = off)"`
	ShutdownTimeout Seconds `env:"ODEK_WORKER_SHUTDOWN_TIMEOUT" env-default:"30s" env-description:"on SIGTERM, how long running jobs may finish before they are canceled and left for redelivery"`
	SessionTTL      Seconds `env:"ODEK_SESSION_TTL" env-default:"0" env-description:"forget a chat's session this long after its last job (0 = never)"`
}

// ReadEnv fills dst, a pointer to one of the structs above (or any
// struct tagged the same way, embedded structs included), from environ
// (nil ⇒ the process environment). A variable set to "" counts as unset
// (its env-default applies). A value that does not parse is an *Error
// naming the variable.
func ReadEnv(environ []string, dst any) error {
	if environ == nil {
		environ = os.Environ()
	}
	return readEnvFrom(environ, reflect.ValueOf(dst).Elem())
}

func readEnvFrom(environ []string, rv reflect.Value) error {
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := readEnvFrom(environ, rv.Field(i)); err != nil {
				return err
			}
			continue
		}
		name := f.Tag.Get(tagEnv)
		if name == "" {
			continue
		}
		val, ok := lookup(environ, name)
		if !ok || val == "" {
			if val, ok = f.Tag.Lookup(tagDefault); !ok {
				continue
			}
		}
		if err := setField(rv.Field(i), val); err != nil {
			return &Error{Source: "environment variable " + name, Reason: err.Error(), Err: ErrInvalid}
		}
	}
	return nil
}

// The struct tags of a variable: its name, its default, its doc line.
const (
	tagEnv         = "env"
	tagDefault     = "env-default"
	tagDescription = "env-description"
)

func setField(v reflect.Value, s string) error {
	if setter, ok := v.Addr().Interface().(interface{ SetValue(string) error }); ok {
		return setter.SetValue(s)
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true/false or 1/0, got %q", clip(s))
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", clip(s))
		}
		v.SetInt(n)
	default:
		return fmt.Errorf("unsupported field kind %s", v.Kind())
	}
	return nil
}

// EnvGroup is one documented group of environment variables.
type EnvGroup struct {
	Title string
	Vars  any // pointer to a struct tagged env, env-default, env-description
}

// EnvGroups are the environment variables of the odek binary, by group,
// for `odek config env`. A variable is in exactly one group.
func EnvGroups() []EnvGroup {
	return []EnvGroup{
		{"Model endpoint and configuration (every command)", &envVars{}},
		{"Every command", &ProcessEnv{}},
		{"odek worker, odek queue and odek-bot", &SharedEnv{}},
		{"odek worker and odek queue", &WorkerEnv{}},
	}
}

// envVar is one declared variable.
type envVar struct {
	name, typ, def, doc string
}

// declared lists the variables of the struct v points to, sorted by
// name; embedded structs are included when deep is set (they are groups
// of their own in EnvText).
func declared(v any, deep bool) []envVar {
	var out []envVar
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				if deep {
					walk(f.Type)
				}
				continue
			}
			name := f.Tag.Get(tagEnv)
			if name == "" {
				continue
			}
			typ := f.Type.Kind().String()
			if f.Type == reflect.TypeOf(Seconds(0)) {
				typ = "duration"
			}
			out = append(out, envVar{name, typ, f.Tag.Get(tagDefault), f.Tag.Get(tagDescription)})
		}
	}
	walk(reflect.TypeOf(v).Elem())
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// EnvText renders groups, one block each: every variable with its type,
// its doc line and its default. A struct embedded in a group's struct is
// not repeated there (it is a group of its own).
func EnvText(groups []EnvGroup) string {
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(g.Title + ":\n")
		for _, v := range declared(g.Vars, false) {
			fmt.Fprintf(&b, "  %s %s\n    \t%s", v.name, v.typ, v.doc)
			if v.def != "" {
				fmt.Fprintf(&b, " (default %q)", v.def)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// EnvNames lists the variable names of groups, embedded structs
// included, for tests and docs.
func EnvNames(groups []EnvGroup) []string {
	var names []string
	for _, g := range groups {
		for _, v := range declared(g.Vars, true) {
			names = append(names, v.name)
		}
	}
	return names
}

// EnvUsage is the help of a flag that stands for a variable of the struct
// v points to: the variable's doc line and its name, so a flag and its
// variable are documented once.
func EnvUsage(v any, name string) string {
	for _, d := range declared(v, true) {
		if d.name == name {
			return d.doc + " (env " + name + ")"
		}
	}
	panic("config: no variable " + name + " declared") // a programming error; tests run every flag set
}

// EnvSet reports whether the process environment sets name to a non-empty
// value (a shared setting given explicitly must match the stored one).
func EnvSet(name string) bool {
	v, ok := os.LookupEnv(name)
	return ok && v != ""
}

// ApproveMCP reports ODEK_APPROVE_MCP of the process environment. Only a
// true value grants (1, t, true, …); anything unparsable grants nothing
// (fail closed) — `odek config env` documents the variable.
func ApproveMCP() bool {
	var p ProcessEnv
	return ReadEnv(nil, &p) == nil && p.ApproveMCP
}
