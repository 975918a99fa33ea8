package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/odekrun/odek"

// TestImportDirection checks the module's real import graph against Rules.
// The graph is read for the host OS and for windows, so imports in files
// behind build constraints (open_other.go and the like) are checked too.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	var pkgs []Package
	for _, goos := range []string{"", "windows"} {
		pkgs = append(pkgs, listPackages(t, goos)...)
	}
	// The check must not pass vacuously: the packages that exist since the
	// first commit have to be in the list.
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.ImportPath] = true
	}
	for _, must := range []string{"events", "internal/llm", "internal/redact", "internal/config", "cmd/odek"} {
		if !seen[module+"/"+must] {
			t.Fatalf("go list did not report %s/%s; the check would be vacuous", module, must)
		}
	}
	for _, v := range dedupe(Check(module, pkgs, Rules)) {
		t.Errorf("import rule broken: %s", v)
	}
}

// listPackages runs `go list` over the whole module from its root and
// returns each package's direct imports. goos "" means the host's.
func listPackages(t *testing.T, goos string) []Package {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not found in PATH: %v", err)
	}
	root := moduleRoot(t, goBin)
	// -e: a package that does not compile right now (someone is mid-edit)
	// still has its imports listed; compile errors are other tests' job.
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Imports,Module", "./...")
	cmd.Dir = root
	cmd.Env = os.Environ()
	if goos != "" {
		cmd.Env = append(cmd.Env, "GOOS="+goos)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list (GOOS=%q): %v\n%s", goos, err, stderr.Bytes())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Module     *struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if p.Module != nil && p.Module.Path != module {
			t.Fatalf("package %s belongs to module %s, want %s", p.ImportPath, p.Module.Path, module)
		}
		pkgs = append(pkgs, Package{ImportPath: p.ImportPath, Imports: p.Imports})
	}
	return pkgs
}

func moduleRoot(t *testing.T, goBin string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	root, ok := strings.CutSuffix(gomod, "/go.mod")
	if !ok {
		t.Fatalf("go env GOMOD = %q, want a go.mod path", gomod)
	}
	return root
}

func dedupe(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestCheckCatchesViolations(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	tests := []struct {
		name    string
		pkg     Package
		wantBad []string // imports reported, in order
	}{
		{"leaf with stdlib only", Package{m("events"), []string{"context", "encoding/json", "syscall"}}, nil},
		{"leaf importing a module package", Package{m("events"), []string{"fmt", m("internal/redact")}}, []string{m("internal/redact")}},
		{"leaf importing logrus", Package{m("internal/redact"), []string{"github.com/sirupsen/logrus"}}, []string{"github.com/sirupsen/logrus"}},
		{"artifacts importing events", Package{m("artifacts"), []string{m("events")}}, []string{m("events")}},
		{"llm importing x/sys", Package{m("internal/llm"), []string{"golang.org/x/sys/unix"}}, []string{"golang.org/x/sys/unix"}},
		{"llm may import the schema leaf", Package{m("internal/llm"), []string{m("internal/toolschema"), "encoding/json"}}, nil},
		{"toolschema is a stdlib leaf", Package{m("internal/toolschema"), []string{"encoding/json", m("internal/redact")}}, []string{m("internal/redact")}},
		{"leaf helper package may import its leaf", Package{m("events/eventstest"), []string{m("events"), "testing"}}, nil},
		{"mcpclient allowed set", Package{m("mcpclient"), []string{"os/exec", m("artifacts"), m("events"), "github.com/sirupsen/logrus", "golang.org/x/sys/unix"}}, nil},
		{"mcpclient importing agent and redis", Package{m("mcpclient"), []string{m("agent"), "github.com/redis/go-redis/v9"}}, []string{m("agent"), "github.com/redis/go-redis/v9"}},
		{"mcpclient importing a look-alike module", Package{m("mcpclient"), []string{"golang.org/x/sysx"}}, []string{"golang.org/x/sysx"}},
		{"anyone importing cmd", Package{m("worker"), []string{m("cmd/odek")}}, []string{m("cmd/odek")}},
		{"cmd importing cmd", Package{m("cmd/odek"), []string{m("cmd/odek/internal/x")}}, []string{m("cmd/odek/internal/x")}},
		{"cmd importing everything else", Package{m("cmd/odek"), []string{m("agent"), m("worker"), m("bot"), m("queue"), m("internal/config")}}, nil},
		{"queue importing worker and bot", Package{m("queue"), []string{m("worker"), m("bot/format"), m("events")}}, []string{m("worker"), m("bot/format")}},
		{"queue helper importing worker", Package{m("queue/queuetest"), []string{m("worker")}}, []string{m("worker")}},
		{"agent importing front ends", Package{m("agent"), []string{m("queue"), m("worker"), m("bot")}}, []string{m("queue"), m("queue"), m("worker"), m("worker"), m("bot"), m("bot")}}, // the Only and the Never rule
		{"agent importing an implementation of its interfaces", Package{m("agent"), []string{m("internal/llm"), m("internal/tools"), m("events")}}, []string{m("internal/llm"), m("internal/tools")}},
		{"internal importing agent", Package{m("internal/session"), []string{m("agent"), "os"}}, []string{m("agent")}},
		{"an implementation of agent's interfaces may import it", Package{m("internal/tools"), []string{m("agent"), m("artifacts")}}, nil},
		{"internal helper importing agent", Package{m("internal/llm/llmtest"), []string{m("agent")}}, []string{m("agent")}},
		{"internal/subagent may import agent", Package{m("internal/subagent"), []string{m("agent"), m("artifacts")}}, nil},
		{"internal/subagent still not worker", Package{m("internal/subagent"), []string{m("worker")}}, []string{m("worker")}},
		{"prefix look-alike is not a match", Package{m("internal/tools"), []string{m("agentx")}}, nil},
		{"worker importing bot", Package{m("worker"), []string{m("bot"), m("agent"), m("queue")}}, []string{m("bot")}},
		{"bot importing agent", Package{m("bot"), []string{m("agent"), m("queue")}}, []string{m("agent")}},
		{"bot importing go-redis (the status ledger lives in queue)", Package{m("bot"), []string{"github.com/redis/go-redis/v9", m("queue")}}, []string{"github.com/redis/go-redis/v9"}},
		{"bot importing the model client or its speech side", Package{m("bot/tgclient"), []string{m("internal/llm"), m("internal/llm/speech")}}, []string{m("internal/llm"), m("internal/llm/speech")}},
		{"the chat core importing Telegram", Package{m("bot/chatcore"), []string{"github.com/go-telegram-bot-api/telegram-bot-api/v5", m("bot/tgclient"), m("queue"), m("bot/tgformat")}}, []string{"github.com/go-telegram-bot-api/telegram-bot-api/v5", m("bot/tgclient")}},
		{"bottest may import the model side (its fakes)", Package{m("bot/bottest"), []string{m("internal/llm/speech")}}, nil},
		{"package outside the module is ignored", Package{"example.com/other", []string{m("cmd/odek")}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range Check(module, []Package{tt.pkg}, Rules) {
				got = append(got, v.Imported)
			}
			if !slices.Equal(got, tt.wantBad) {
				t.Errorf("Check(%s → %v) reported %v, want %v", tt.pkg.ImportPath, tt.pkg.Imports, got, tt.wantBad)
			}
		})
	}
}

func TestViolationNamesBothEndsAndReason(t *testing.T) {
	vs := Check(module, []Package{{module + "/events", []string{module + "/agent"}}}, Rules)
	if len(vs) != 1 {
		t.Fatalf("got %d violations, want 1: %v", len(vs), vs)
	}
	s := vs[0].String()
	for _, want := range []string{module + "/events", module + "/agent", "stdlib only"} {
		if !strings.Contains(s, want) {
			t.Errorf("violation %q does not mention %q", s, want)
		}
	}
}

func TestIsStd(t *testing.T) {
	for path, want := range map[string]bool{
		"fmt": true, "net/http": true, "C": true,
		"github.com/sirupsen/logrus": false, "golang.org/x/sys/unix": false, "example.com": false,
	} {
		if got := IsStd(path); got != want {
			t.Errorf("IsStd(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"...", "anything/at/all", true},
		{"events", "events", true},
		{"events", "events/eventstest", false},
		{"queue/...", "queue", true},
		{"queue/...", "queue/queuetest", true},
		{"queue/...", "queuex", false},
		{"cmd/...", "cmd", true},
		{"internal/...", "internal", true},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

// Issue 27's rules bite: the schedule package may not learn how a fire
// runs or is shown, the schedule tool has no store of its own, and the
// bot never imports the tool.
func TestScheduleRulesCatchViolations(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	for _, c := range []struct{ from, imp string }{
		{"schedule", m("agent")},
		{"schedule", m("worker")},
		{"schedule", m("bot")},
		{"schedule", m("internal/host")},
		{"schedule/scheduletool", "github.com/redis/go-redis/v9"},
		{"schedule/scheduletool", m("worker")},
		{"bot", m("schedule/scheduletool")},
	} {
		got := Check(module, []Package{{ImportPath: m(c.from), Imports: []string{c.imp}}}, Rules)
		if len(got) == 0 {
			t.Errorf("%s importing %s broke no rule", c.from, c.imp)
		}
	}
	ok := Check(module, []Package{{ImportPath: m("schedule"), Imports: []string{m("queue"), "github.com/robfig/cron/v3", "time"}}}, Rules)
	if len(ok) != 0 {
		t.Errorf("schedule's own imports flagged: %v", ok)
	}
}
