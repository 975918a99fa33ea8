package config

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ilyakaznacheev/cleanenv"
)

// Every environment variable odek reads is declared here, in one of the
// cleanenv-tagged structs below (odek-bot's Telegram variables in
// cmd/odek-bot, its own surface): `odek config env` lists them with their
// descriptions, the structs are filled by ReadEnv, and a value that does not
// parse is an error naming the variable (never silently the default).

// Seconds is a duration read from the environment as a Go duration ("90s",
// "5m") or a plain number of seconds ("90").
type Seconds time.Duration

// SetValue implements cleanenv.Setter.
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

// WorkerEnv are the variables of `odek worker` and the `odek queue`
// commands; each is also a flag, which wins.
type WorkerEnv struct {
	RedisURL        string  `env:"REDIS_URL" env-description:"URL of the job queue: redis://, rediss://, redis+sentinel://host:port,.../master, redis+cluster://host:port,... (required by odek worker and odek queue; see docs/DEPLOY.md)"`
	QueuePrefix     string  `env:"ODEK_QUEUE_PREFIX" env-default:"odek:" env-description:"key prefix of the queue and sessions, shared with the bot"`
	Lease           Seconds `env:"ODEK_QUEUE_LEASE" env-default:"30s" env-description:"lease of a claimed job without heartbeat before another worker takes it over (stored in the queue by the first worker)"`
	MaxAttempts     int     `env:"ODEK_QUEUE_MAX_ATTEMPTS" env-default:"3" env-description:"deaths of a job's worker, while the job ran alone, before it is dead-lettered (stored in the queue by the first worker)"`
	Concurrency     int     `env:"ODEK_WORKER_CONCURRENCY" env-default:"4" env-description:"jobs one worker runs at once"`
	Name            string  `env:"ODEK_WORKER_NAME" env-description:"consumer name, unique per worker (default host-pid-random)"`
	MetricsAddr     string  `env:"ODEK_WORKER_METRICS_ADDR" env-description:"serve /healthz and /metrics on this address, e.g. :9464 (empty = off)"`
	ShutdownTimeout Seconds `env:"ODEK_WORKER_SHUTDOWN_TIMEOUT" env-default:"30s" env-description:"on SIGTERM, how long running jobs may finish before they are canceled and left for redelivery"`
	ArtifactsDir    string  `env:"ODEK_ARTIFACTS_DIR" env-description:"directory shared with the front end; each chat works in <dir>/<chat id> (empty: $ODEK_HOME/chats, no artifacts reported)"`
	ApprovalTimeout Seconds `env:"ODEK_APPROVAL_TIMEOUT" env-default:"300" env-description:"how long a tool approval waits for the chat before denying"`
	SessionTTL      Seconds `env:"ODEK_SESSION_TTL" env-default:"0" env-description:"forget a chat's session this long after its last job (0 = never)"`
	LogLevel        string  `env:"ODEK_LOG_LEVEL" env-default:"info" env-description:"debug, info, warn or error"`
	Models          string  `env:"ODEK_TELEGRAM_MODELS" env-description:"comma-separated models a job may ask for (the bot's /model choices); a job asking for another runs the configured model"`
}

// ReadEnv fills dst, a pointer to one of the structs above (or any
// cleanenv-tagged struct), from environ (nil ⇒ the process environment).
// A value that does not parse is an *Error naming the variable.
func ReadEnv(environ []string, dst any) error {
	if environ != nil {
		// cleanenv reads the process environment only: apply defaults
		// and environ's values through the same tags by hand.
		return readEnvFrom(environ, dst)
	}
	if err := cleanenv.ReadEnv(dst); err != nil {
		return &Error{Source: "environment", Reason: err.Error(), Err: ErrInvalid}
	}
	return nil
}

func readEnvFrom(environ []string, dst any) error {
	rv := reflect.ValueOf(dst).Elem()
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name := f.Tag.Get(cleanenv.TagEnv)
		if name == "" {
			continue
		}
		val, ok := lookup(environ, name)
		if !ok || val == "" {
			if val, ok = f.Tag.Lookup(cleanenv.TagEnvDefault); !ok {
				continue
			}
		}
		if err := setField(rv.Field(i), val); err != nil {
			return &Error{Source: "environment variable " + name, Reason: err.Error(), Err: ErrInvalid}
		}
	}
	return nil
}

func setField(v reflect.Value, s string) error {
	if setter, ok := v.Addr().Interface().(cleanenv.Setter); ok {
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
	Vars  any // pointer to a cleanenv-tagged struct
}

// EnvGroups are the environment variables of the odek binary, by group,
// for `odek config env`.
func EnvGroups() []EnvGroup {
	return []EnvGroup{
		{"Model endpoint and configuration (every command)", &envVars{}},
		{"Every command", &ProcessEnv{}},
		{"odek worker and odek queue", &WorkerEnv{}},
	}
}

// EnvText renders groups with cleanenv's descriptions, one block each.
func EnvText(groups []EnvGroup) string {
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		h := g.Title + ":"
		s, err := cleanenv.GetDescription(g.Vars, &h)
		if err != nil { // a malformed struct; tests rule it out
			s = h
		}
		b.WriteString(s)
		b.WriteString("\n")
	}
	return b.String()
}

// EnvNames lists the variable names of groups, for tests and docs.
func EnvNames(groups []EnvGroup) []string {
	var names []string
	for _, g := range groups {
		rt := reflect.TypeOf(g.Vars).Elem()
		for i := range rt.NumField() {
			if n := rt.Field(i).Tag.Get(cleanenv.TagEnv); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
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
