package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/redact"
)

// node is a parsed YAML value of the small subset docker-compose.yml uses:
// block maps, block lists, JSON-style flow lists and plain or quoted
// scalars. No YAML library: the subset is checked by parseYAML itself,
// which fails on anything else.
type node struct {
	scalar string
	isList bool
	list   []*node
	keys   []string
	m      map[string]*node
}

func (n *node) get(path ...string) *node {
	for _, k := range path {
		if n == nil || n.m == nil {
			return nil
		}
		n = n.m[k]
	}
	return n
}

// strings returns a list of scalars (block or flow).
func (n *node) strings() []string {
	if n == nil {
		return nil
	}
	var out []string
	for _, x := range n.list {
		out = append(out, x.scalar)
	}
	return out
}

type yline struct {
	indent int
	text   string
	no     int
}

func parseYAML(t *testing.T, src string) *node {
	t.Helper()
	var lines []yline
	for i, l := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.Contains(l, "\t") {
			t.Fatalf("line %d: tabs are not YAML indentation", i+1)
		}
		lines = append(lines, yline{indent: len(l) - len(strings.TrimLeft(l, " ")), text: trimmed, no: i + 1})
	}
	n, rest := parseBlock(t, lines, 0)
	if len(rest) != 0 {
		t.Fatalf("line %d: unexpected indentation", rest[0].no)
	}
	return n
}

func parseBlock(t *testing.T, lines []yline, indent int) (*node, []yline) {
	t.Helper()
	if len(lines) == 0 {
		return &node{}, nil
	}
	if strings.HasPrefix(lines[0].text, "- ") {
		n := &node{isList: true}
		for len(lines) > 0 && lines[0].indent == indent && strings.HasPrefix(lines[0].text, "- ") {
			n.list = append(n.list, &node{scalar: unquote(t, lines[0].no, strings.TrimPrefix(lines[0].text, "- "))})
			lines = lines[1:]
		}
		return n, lines
	}
	n := &node{m: map[string]*node{}}
	for len(lines) > 0 && lines[0].indent == indent {
		l := lines[0]
		k, v, ok := strings.Cut(l.text, ":")
		if !ok {
			t.Fatalf("line %d: want key: value, got %q", l.no, l.text)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, dup := n.m[k]; dup {
			t.Fatalf("line %d: duplicate key %q", l.no, k)
		}
		lines = lines[1:]
		var child *node
		switch {
		case v == "" && len(lines) > 0 && lines[0].indent > indent:
			child, lines = parseBlock(t, lines, lines[0].indent)
		case v == "":
			child = &node{}
		case strings.HasPrefix(v, "["):
			var items []string
			if err := json.Unmarshal([]byte(v), &items); err != nil {
				t.Fatalf("line %d: flow list must be JSON strings: %v", l.no, err)
			}
			child = &node{isList: true}
			for _, it := range items {
				child.list = append(child.list, &node{scalar: it})
			}
		default:
			child = &node{scalar: unquote(t, l.no, v)}
		}
		n.m[k] = child
		n.keys = append(n.keys, k)
	}
	return n, lines
}

func unquote(t *testing.T, no int, v string) string {
	if strings.HasPrefix(v, `"`) {
		var s string
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			t.Fatalf("line %d: bad quoted string %s", no, v)
		}
		return s
	}
	if strings.ContainsAny(v, "{}&*!|>'%@`") {
		t.Fatalf("line %d: %q is outside the YAML subset this test reads", no, v)
	}
	return v
}

// odekEnvNames is every environment variable `odek` reads: the config
// layer's (internal/config) and the literal names cmd/odek passes to
// os.Getenv, os.LookupEnv and its env helpers, found by parsing its source.
func odekEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, n := range config.EnvNames(config.EnvGroups()) {
		names[n] = true
	}
	fset := token.NewFileSet()
	files, _ := filepath.Glob("../odek/*.go")
	readers := map[string]bool{"Getenv": true, "LookupEnv": true, "envOr": true, "envInt": true, "envDuration": true}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && readers[name] && lit.Kind == token.STRING {
				names[strings.Trim(lit.Value, `"`)] = true
			}
			return true
		})
	}
	if !names["REDIS_URL"] || !names["ODEK_WORKER_CONCURRENCY"] || !names["ODEK_API_KEY"] {
		t.Fatalf("odek's environment names not found (got %v): the scan is broken", names)
	}
	return names
}

func botEnvNames() map[string]bool {
	names := map[string]bool{}
	for _, n := range envNames() {
		names[n] = true
	}
	return names
}

func TestComposeFileMatchesCode(t *testing.T) {
	src, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	doc := parseYAML(t, string(src))
	services := doc.get("services")
	if services == nil || services.get("bot") == nil || services.get("worker") == nil || services.get("redis") == nil {
		t.Fatal("services bot, worker and redis are required")
	}
	odekNames, botNames := odekEnvNames(t), botEnvNames()
	// In embedded mode the bot runs the agent itself, so it reads odek's
	// config variables too; in the compose file it never needs to.
	binaries := map[string]struct {
		target string
		reads  map[string]bool
	}{
		"bot":    {"bot", botNames},
		"worker": {"worker", odekNames},
	}
	var artifactMounts []string
	for name, want := range binaries {
		svc := services.get(name)
		if got := svc.get("build", "target").scalar; got != want.target {
			t.Errorf("%s: build target %q, want %q", name, got, want.target)
		}
		// Commands: the worker image's entrypoint is odek; its command must be
		// a real subcommand. The bot image's entrypoint takes no command.
		cmd := svc.get("command").strings()
		switch name {
		case "worker":
			if len(cmd) == 0 || !odekSubcommands[cmd[0]] {
				t.Errorf("worker: command %q is not an odek subcommand (%v)", cmd, keys(odekSubcommands))
			}
		case "bot":
			if len(cmd) != 0 {
				t.Errorf("bot: odek-bot takes no command, got %q", cmd)
			}
		}
		// Healthchecks run odek-bot healthcheck against the service's own
		// health address.
		hc := svc.get("healthcheck", "test").strings()
		if len(hc) != 4 || hc[0] != "CMD" || hc[1] != "/usr/local/bin/odek-bot" || hc[2] != "healthcheck" {
			t.Errorf("%s: healthcheck %q, want [CMD /usr/local/bin/odek-bot healthcheck URL]", name, hc)
		}
		// Each service reads its own env file: the bot's secrets never
		// reach a worker through it, nor the model key the bot.
		if got, want := svc.get("env_file").scalar, name+".env"; got != want {
			t.Errorf("%s: env_file %q, want %q (its own)", name, got, want)
		}
		// docker-init is PID 1 and reaps orphans; the binary is not PID 1.
		if svc.get("init").scalar != "true" {
			t.Errorf("%s: init: true missing", name)
		}
		envs := svc.get("environment")
		if envs == nil || envs.m == nil {
			t.Fatalf("%s: environment map missing", name)
		}
		// Redis is reached with its password, which comes from .env.
		if u := envs.m["REDIS_URL"]; u == nil || !strings.HasPrefix(u.scalar, "redis://:${REDIS_PASSWORD:?") || !strings.HasSuffix(u.scalar, "}@redis:6379/0") {
			t.Errorf("%s: REDIS_URL must carry ${REDIS_PASSWORD:?...}: %v", name, u)
		}
		// Belt and braces: the other service's secrets are blanked here
		// even if an env file holds them.
		blanked := map[string][]string{
			"bot":    {"ODEK_API_KEY"},
			"worker": {"TELEGRAM_BOT_TOKEN", "ODEK_TELEGRAM_WEBHOOK_SECRET", "ODEK_TELEGRAM_TRANSCRIBE_API_KEY", "ODEK_TELEGRAM_SPEECH_API_KEY"},
		}
		for _, k := range blanked[name] {
			if v := envs.m[k]; v == nil || v.scalar != "" {
				t.Errorf("%s: %s must be set and empty", name, k)
			}
		}
		for _, k := range envs.keys {
			v := envs.m[k].scalar
			if v == "" {
				// A blanked secret: the service must not see what .env gives the other.
				if !odekNames[k] && !botNames[k] {
					t.Errorf("%s: blanks %s, which no binary reads", name, k)
				}
				continue
			}
			if !want.reads[k] {
				t.Errorf("%s: sets %s, which its binary does not read", name, k)
			}
		}
		port := ""
		switch name {
		case "bot":
			port = envs.m["ODEK_HEALTH_ADDR"].scalar
		case "worker":
			port = envs.m["ODEK_WORKER_METRICS_ADDR"].scalar
		}
		if port == "" || len(hc) < 4 || hc[3] != "http://127.0.0.1"+port+"/healthz" {
			t.Errorf("%s: healthcheck URL %q does not match the health address %q", name, hc, port)
		}
		if svc.get("restart").scalar == "" {
			t.Errorf("%s: no restart policy", name)
		}
		// The artifacts volume must be mounted exactly at ODEK_ARTIFACTS_DIR.
		dir := envs.m["ODEK_ARTIFACTS_DIR"]
		if dir == nil || dir.scalar == "" {
			t.Errorf("%s: ODEK_ARTIFACTS_DIR not set", name)
			continue
		}
		found := false
		for _, v := range svc.get("volumes").strings() {
			vol, path, _ := strings.Cut(v, ":")
			if path == dir.scalar {
				found = true
				artifactMounts = append(artifactMounts, vol)
			}
		}
		if !found {
			t.Errorf("%s: no volume mounted at ODEK_ARTIFACTS_DIR %s", name, dir.scalar)
		}
	}
	// The bot's state file lives on a volume, or restarts would forget it.
	bot := services.get("bot")
	if sf := bot.get("environment").m["ODEK_TELEGRAM_STATE_FILE"]; sf == nil || sf.scalar == "" {
		t.Error("bot: ODEK_TELEGRAM_STATE_FILE not set")
	} else {
		found := false
		for _, v := range bot.get("volumes").strings() {
			vol, path, _ := strings.Cut(v, ":")
			if path == filepath.Dir(sf.scalar) && doc.get("volumes", vol) != nil {
				found = true
			}
		}
		if !found {
			t.Errorf("bot: no named volume mounted at %s, the state file's directory", filepath.Dir(sf.scalar))
		}
	}
	if len(artifactMounts) != 2 || artifactMounts[0] != artifactMounts[1] || doc.get("volumes", artifactMounts[0]) == nil {
		t.Errorf("bot and worker must share one named artifacts volume, got %v", artifactMounts)
	}
	redis := services.get("redis")
	if c := strings.Join(redis.get("command").strings(), " "); !strings.Contains(c, "--appendonly yes") {
		t.Errorf("redis: AOF persistence off: %q", c)
	}
	// A password by default: Compose refuses to start without one.
	if c := strings.Join(redis.get("command").strings(), " "); !strings.Contains(c, "--requirepass ${REDIS_PASSWORD:?") {
		t.Errorf("redis: no --requirepass ${REDIS_PASSWORD:?...}: %q", c)
	}
	if a := redis.get("environment", "REDISCLI_AUTH"); a == nil || !strings.HasPrefix(a.scalar, "${REDIS_PASSWORD:?") {
		t.Error("redis: the healthcheck's redis-cli has no REDISCLI_AUTH")
	}
	// Every ${VAR} Compose substitutes is in .env.example.
	dotenv := readEnvFile(t, "../../.env.example")
	for _, m := range regexp.MustCompile(`\$\{([A-Z0-9_]+)`).FindAllStringSubmatch(string(src), -1) {
		if _, ok := dotenv[m[1]]; !ok {
			t.Errorf("docker-compose.yml substitutes ${%s}, which .env.example does not list", m[1])
		}
	}
	if vols := redis.get("volumes").strings(); len(vols) != 1 || !strings.HasSuffix(vols[0], ":/data") {
		t.Errorf("redis: data volume %v", vols)
	}
	if redis.get("healthcheck") == nil {
		t.Error("redis: no healthcheck")
	}
}

// odekSubcommands are the subcommands `odek` accepts (cmd/odek's run).
// TestOdekSubcommandsAreReal keeps this list honest against the binary.
var odekSubcommands = map[string]bool{"worker": true}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readEnvFile reads a KEY=value file (comments and blank lines skipped).
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Errorf("%s line %d: not KEY=value", path, i+1)
			continue
		}
		if _, dup := out[k]; dup {
			t.Errorf("%s: %s twice", path, k)
		}
		out[k] = v
	}
	return out
}

// The three env files of docker compose: bot.env holds only what odek-bot
// reads, worker.env only what odek reads, and each holds no secret of the
// other service (the bot no model key, the workers no bot token, webhook
// secret or transcription key); .env holds the Redis password and the
// settings both share. Every bot variable is documented in one of them or
// set by docker-compose.yml.
func TestEnvFilesGiveEachServiceOnlyItsOwn(t *testing.T) {
	odekNames, botNames := odekEnvNames(t), botEnvNames()
	botOwn := map[string]bool{"TELEGRAM_BOT_TOKEN": true, "ODEK_TELEGRAM_WEBHOOK_SECRET": true, "ODEK_TELEGRAM_TRANSCRIBE_API_KEY": true, "ODEK_TELEGRAM_SPEECH_API_KEY": true}
	workerOwn := map[string]bool{"ODEK_API_KEY": true}
	files := []struct {
		path   string
		reads  map[string]bool
		allow  map[string]bool // the secret-looking names it may hold
		reader string
	}{
		{"../../bot.env.example", botNames, botOwn, "odek-bot"},
		{"../../worker.env.example", odekNames, workerOwn, "odek"},
	}
	documented := map[string]bool{}
	for _, f := range files {
		for k := range readEnvFile(t, f.path) {
			documented[k] = true
			if !f.reads[k] {
				t.Errorf("%s sets %s, which %s does not read", f.path, k, f.reader)
			}
			if redact.IsSecretName(k) && !f.allow[k] {
				t.Errorf("%s holds the secret %s, which is not its service's", f.path, k)
			}
		}
	}
	for k := range readEnvFile(t, "../../.env.example") {
		documented[k] = true
		if k == "REDIS_PASSWORD" {
			continue
		}
		if !botNames[k] || !odekNames[k] {
			t.Errorf(".env.example sets %s: it holds only REDIS_PASSWORD and what both binaries read", k)
		}
		if redact.IsSecretName(k) {
			t.Errorf(".env.example holds the secret %s", k)
		}
	}
	src, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for k := range parseYAML(t, string(src)).get("services", "bot", "environment").m {
		documented[k] = true
	}
	for k := range botNames {
		switch k {
		case "ODEK_WORKERS", "ODEK_APPROVAL_TIMEOUT": // embedded mode only
			continue
		}
		if !documented[k] {
			t.Errorf("no env file documents %s", k)
		}
	}
}

func TestParseYAMLSubset(t *testing.T) {
	doc := parseYAML(t, "a:\n  b: \"x y\"\n  c: [\"1\", \"2\"]\n  d:\n    - e\n    - f:g\n")
	got := fmt.Sprintf("%s %v %v", doc.get("a", "b").scalar, doc.get("a", "c").strings(), doc.get("a", "d").strings())
	if got != "x y [1 2] [e f:g]" {
		t.Errorf("parsed %s", got)
	}
}
