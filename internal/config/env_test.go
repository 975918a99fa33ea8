package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestHomeDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("paths below are Unix paths")
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		environ []string
		want    string
		err     error
	}{
		{"ODEK_HOME wins", env("HOME=/home/u", "ODEK_HOME=/srv/odek"), "/srv/odek", nil},
		{"default under HOME", env("HOME=/home/u"), "/home/u/.odek", nil},
		{"empty ODEK_HOME is unset", env("HOME=/home/u", "ODEK_HOME="), "/home/u/.odek", nil},
		{"tilde expanded", env("HOME=/home/u", "ODEK_HOME=~/agents/odek"), "/home/u/agents/odek", nil},
		{"bare tilde", env("HOME=/home/u", "ODEK_HOME=~"), "/home/u", nil},
		{"cleaned", env("ODEK_HOME=/srv//odek/../odek/"), "/srv/odek", nil},
		{"relative made absolute", env("ODEK_HOME=rel/odek"), filepath.Join(cwd, "rel/odek"), nil},
		{"tilde without HOME", env("ODEK_HOME=~/x"), "", ErrNoHome},
		{"nothing set", env(), "", ErrNoHome},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := HomeDir(tt.environ)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Errorf("HomeDir = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestLoadNoHome(t *testing.T) {
	_, _, err := Load(Options{ProjectDir: t.TempDir(), Environ: env()})
	if !errors.Is(err, ErrNoHome) {
		t.Errorf("err = %v, want ErrNoHome", err)
	}
}

func TestLoadHomeFromEnviron(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, OperatorFileName), `{"model":"from-odek-home"}`, 0o600)
	c, _ := mustLoad(t, Options{ProjectDir: t.TempDir(), Environ: env("ODEK_HOME=" + home)})
	if c.Home != home || c.Model != "from-odek-home" || c.Layers.Operator.Path != filepath.Join(home, OperatorFileName) {
		t.Errorf("home=%q model=%q layer=%v", c.Home, c.Model, c.Layers.Operator)
	}
}

// TestReadEnvProcessMatchesSlice pins the reading of the process
// environment (the production path) to the injected-environment one. It
// sets every variable it reads, so the host environment cannot leak in.
func TestReadEnvProcessMatchesSlice(t *testing.T) {
	vars := map[string]string{
		"ODEK_HOME":      "/srv/odek",
		"ODEK_API_KEY":   "",
		"OPENAI_API_KEY": "openai-key",
		"ODEK_BASE_URL":  "http://127.0.0.1:9/v1",
	} // ODEK_MODEL deliberately unset
	var environ []string
	for k, v := range vars {
		t.Setenv(k, v)
		environ = append(environ, k+"="+v)
	}
	t.Setenv("ODEK_MODEL", "x") // registers restoration of the original value
	os.Unsetenv("ODEK_MODEL")

	fromProcess, err := readEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	fromSlice, err := readEnv(environ)
	if err != nil {
		t.Fatal(err)
	}
	want := envVars{Home: "/srv/odek", OpenAIAPIKey: "openai-key", BaseURL: "http://127.0.0.1:9/v1"}
	if fromProcess != want || fromSlice != want {
		t.Errorf("process %+v, slice %+v, want %+v", fromProcess, fromSlice, want)
	}
}

func TestEnvVarsAreStrings(t *testing.T) {
	rt := reflect.TypeFor[envVars]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Type.Kind() != reflect.String || f.Tag.Get("env") == "" || f.Tag.Get("env-description") == "" {
			t.Errorf("field %s: the slice reader supports only described string fields with an env tag", f.Name)
		}
	}
}

func TestEnvText(t *testing.T) {
	u := EnvText(EnvGroups())
	for _, v := range []string{"ODEK_HOME", "ODEK_API_KEY", "OPENAI_API_KEY", "ODEK_BASE_URL", "ODEK_MODEL", "ODEK_APPROVE_MCP",
		"REDIS_URL", "ODEK_WORKER_CONCURRENCY", "ODEK_QUEUE_LEASE", "odek worker and odek queue:"} {
		if !strings.Contains(u, v) {
			t.Errorf("EnvText lacks %s:\n%s", v, u)
		}
	}
}

func TestReadEnvNamesTheVariable(t *testing.T) {
	var w WorkerEnv
	if err := ReadEnv([]string{}, &w); err != nil || w.Concurrency != 4 || w.Lease.D() != 30*time.Second || w.QueuePrefix != "odek:" {
		t.Fatalf("defaults: %+v %v", w, err)
	}
	if err := ReadEnv([]string{"ODEK_WORKER_CONCURRENCY=8", "ODEK_QUEUE_LEASE=90", "ODEK_SESSION_TTL=2h"}, &w); err != nil ||
		w.Concurrency != 8 || w.Lease.D() != 90*time.Second || w.SessionTTL.D() != 2*time.Hour {
		t.Fatalf("set: %+v %v", w, err)
	}
	for _, bad := range []string{"ODEK_WORKER_CONCURRENCY=four", "ODEK_QUEUE_LEASE=-1", "ODEK_APPROVAL_TIMEOUT=soon"} {
		err := ReadEnv([]string{bad}, &WorkerEnv{})
		name, _, _ := strings.Cut(bad, "=")
		if err == nil || !strings.Contains(err.Error(), name) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want one naming %s", bad, err, name)
		}
	}
	var p ProcessEnv
	if err := ReadEnv([]string{"ODEK_APPROVE_MCP=1"}, &p); err != nil || !p.ApproveMCP {
		t.Fatalf("approve: %+v %v", p, err)
	}
}

// Every variable is declared by exactly one struct field, with a doc
// line: the bot and the worker share theirs through SharedEnv instead of
// declaring REDIS_URL, ODEK_APPROVAL_TIMEOUT and the rest twice (once
// with two types).
func TestEveryVariableIsDeclaredOnce(t *testing.T) {
	seen := map[string]string{}
	for _, v := range []any{&envVars{}, &ProcessEnv{}, &SharedEnv{}, &WorkerEnv{}, &BotEnv{}} {
		owner := reflect.TypeOf(v).Elem().Name()
		for _, d := range declared(v, false) {
			if prev, dup := seen[d.name]; dup {
				t.Errorf("%s is declared in %s and again in %s", d.name, prev, owner)
			}
			seen[d.name] = owner
			if d.doc == "" {
				t.Errorf("%s (%s) has no doc line", d.name, owner)
			}
		}
	}
	if len(seen) < 40 {
		t.Fatalf("only %d variables found: the walk is broken", len(seen))
	}
	// `odek config env` lists each once, and odek-bot's shared ones too.
	all := append(EnvGroups(), EnvGroup{"odek-bot", &BotEnv{}})
	text := EnvText(all)
	for name := range seen {
		if n := strings.Count(text, "\n  "+name+" "); n != 1 {
			t.Errorf("%s is listed %d times by EnvText", name, n)
		}
	}
	if got := len(EnvNames([]EnvGroup{{Vars: &BotEnv{}}})); got != len(declared(&BotEnv{}, false))+len(declared(&SharedEnv{}, false)) {
		t.Errorf("EnvNames of BotEnv: %d names, want its own and SharedEnv's", got)
	}
}

// Both front ends read a shared variable the same way: one type, one
// parser (ODEK_APPROVAL_TIMEOUT was a string for the bot and seconds for
// the worker).
func TestSharedVariablesReadAlikeByBotAndWorker(t *testing.T) {
	environ := []string{"REDIS_URL=redis://q:6379/0", "ODEK_APPROVAL_TIMEOUT=5m", "ODEK_TELEGRAM_MODELS=a,b", "ODEK_QUEUE_PREFIX="}
	var b BotEnv
	var w WorkerEnv
	if err := ReadEnv(environ, &b); err != nil {
		t.Fatal(err)
	}
	if err := ReadEnv(environ, &w); err != nil {
		t.Fatal(err)
	}
	if b.SharedEnv != w.SharedEnv {
		t.Fatalf("bot read %+v, worker %+v", b.SharedEnv, w.SharedEnv)
	}
	if b.ApprovalTimeout.D() != 5*time.Minute || b.RedisURL != "redis://q:6379/0" || b.QueuePrefix != "odek:" || b.LogLevel != "info" {
		t.Fatalf("shared: %+v", b.SharedEnv)
	}
	if err := ReadEnv([]string{"ODEK_APPROVAL_TIMEOUT=soon"}, &BotEnv{}); err == nil || !strings.Contains(err.Error(), "ODEK_APPROVAL_TIMEOUT") {
		t.Fatalf("a bad shared value for the bot: %v", err)
	}
}

func TestEnvUsageIsTheDocLine(t *testing.T) {
	got := EnvUsage(&WorkerEnv{}, "ODEK_APPROVAL_TIMEOUT")
	if !strings.HasPrefix(got, "seconds (or a duration like 5m) a tool approval waits") || !strings.HasSuffix(got, "(env ODEK_APPROVAL_TIMEOUT)") {
		t.Fatalf("EnvUsage = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("EnvUsage of an undeclared variable did not panic")
		}
	}()
	EnvUsage(&WorkerEnv{}, "ODEK_NOT_A_VARIABLE")
}
