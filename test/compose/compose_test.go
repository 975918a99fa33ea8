// Package compose tests the team instance as it ships: the repository's
// Dockerfile and docker-compose.yml, built and run by `docker compose` on a
// real Docker engine, against the fake Telegram Bot API (bot/bottest) and
// the fake model (internal/llm/llmtest) served on this machine where the
// containers reach them.
//
// The test runs only from test/compose/run.sh (which starts a Docker
// engine when none runs, installs Compose v2, builds the base images and
// sets ODEK_COMPOSE=1); `go test ./...` without it skips with a message.
// With ODEK_REQUIRE_COMPOSE=1 and no ODEK_COMPOSE it fails instead.
package compose

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// project is the compose project name, so containers and volumes have
// names the test can find and a developer's own instance is not touched.
const project = "odekci"

const apiKey = "sk-compose-test-key-0123456789abcdef"

// user is the allowlisted Telegram user; chat ids equal user ids in
// private chats.
const user = 1001

// stage is a long wait: an image build, a container start, a healthcheck
// interval.
const stage = 4 * time.Minute

// step is a wait for one message round trip through Redis and a worker.
const step = 90 * time.Second

type env struct {
	t       *testing.T
	dir     string // the project directory: a copy of the repository
	tg      *bottest.Server
	llm     *fakeModel
	redisPW string // REDIS_PASSWORD in the project's .env
	// files are the compose files, in order (-f each); empty: Compose's
	// default docker-compose.yml.
	files []string
	// services are the services waitHealthy wants running and healthy
	// besides the workers, with how many of each (0: none running).
	services map[string]int
	// profiles are the compose profiles switched on (--profile each).
	profiles []string
	// unchecked are services whose image has no healthcheck: running is
	// enough for waitHealthy.
	unchecked map[string]bool
}

func TestCompose(t *testing.T) {
	if os.Getenv("ODEK_COMPOSE") != "1" {
		if os.Getenv("ODEK_REQUIRE_COMPOSE") == "1" {
			t.Fatal("ODEK_REQUIRE_COMPOSE=1 but ODEK_COMPOSE is not set: run test/compose/run.sh")
		}
		t.Skip("the compose test needs a Docker engine and Compose v2: run test/compose/run.sh")
	}
	began := time.Now()
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, tg: bottest.New(t), llm: newFakeModel(t), redisPW: hex.EncodeToString(pw),
		services: map[string]int{"redis": 1, "bot": 1}}
	e.llm.secret = e.redisPW
	gw := bridgeGateway(t)
	tgURL := serve(t, reverseProxy(t, e.tg.URL()))
	llmURL := serve(t, e.llm)
	e.dir = copyRepo(t)
	// The README's steps: the three env files from their examples.
	writeEnv(t, e.dir, ".env", map[string]string{"REDIS_PASSWORD": e.redisPW})
	writeEnv(t, e.dir, "bot.env", map[string]string{
		"TELEGRAM_BOT_TOKEN":          bottest.Token,
		"TELEGRAM_API_ENDPOINT":       strings.Replace(tgURL, "0.0.0.0", gw, 1),
		"ODEK_TELEGRAM_ALLOWED_USERS": fmt.Sprint(user),
	})
	writeEnv(t, e.dir, "worker.env", map[string]string{
		"ODEK_BASE_URL": strings.Replace(llmURL, "0.0.0.0", gw, 1) + "/v1",
		"ODEK_API_KEY":  apiKey,
		"ODEK_MODEL":    "test-model",
		// A killed worker's job is taken over after the lease: short, so
		// the test waits seconds, not the production 30.
		"ODEK_QUEUE_LEASE":        "6",
		"ODEK_WORKER_CONCURRENCY": "2",
	})
	e.compose("down", "-v", "--remove-orphans") // leftovers of an aborted run
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := e.composeErr("logs", "--no-color", "--tail", "150")
			t.Logf("docker compose logs:\n%s", out)
		}
		e.compose("down", "-v", "--remove-orphans")
	})

	// The README's commands, exactly.
	e.timed("docker compose up -d --build", func() { e.compose("up", "-d", "--build") })
	e.timed("docker compose up -d --scale worker=3", func() { e.compose("up", "-d", "--scale", "worker=3") })
	e.timed("all healthy", func() { e.waitHealthy(3) })

	t.Run("env", e.checkEnv)
	t.Run("doctor", e.checkDoctor)
	t.Run("stranger", e.checkStranger)
	t.Run("answer", e.checkAnswer)
	t.Run("status", e.checkStatusEdit)
	t.Run("approval", e.checkApproval)
	var artifact string
	t.Run("artifact", func(t *testing.T) { artifact = e.checkArtifact(t) })
	t.Run("kill", e.checkKill)
	t.Run("redis-restart", e.checkRedisRestart)
	t.Run("down-up", func(t *testing.T) { e.checkDownUp(t, artifact) })
	// The Sentinel stage (docker-compose.sentinel.yml, its master killed
	// mid-job) runs with ODEK_COMPOSE_SENTINEL=1, which .ci/run sets: it
	// adds 1.5-2.5 min to a local run.
	if os.Getenv("ODEK_COMPOSE_SENTINEL") == "1" {
		t.Run("sentinel", e.checkSentinel)
	}
	// The tracing stage (the `tracing` profile's trace viewer, one job
	// found in it) runs with ODEK_COMPOSE_TRACING=1; run.sh then builds
	// the viewer's image (test/compose/trace-viewer-image.sh).
	if os.Getenv("ODEK_COMPOSE_TRACING") == "1" {
		t.Run("tracing", e.checkTracing)
	}
	t.Logf("compose test: %s in all", time.Since(began).Round(time.Second))
}

// ---- the checks ----

// Workers never see the bot token or webhook secret; the bot never sees
// the model key: in the containers' configuration and in the running
// worker's environment. Redis refuses a client without the password, and
// bot and worker run under docker-init.
func (e *env) checkEnv(t *testing.T) {
	for _, id := range e.ids("worker") {
		vars := e.inspectEnv(t, id)
		for _, k := range []string{"TELEGRAM_BOT_TOKEN", "ODEK_TELEGRAM_WEBHOOK_SECRET", "ODEK_TELEGRAM_TRANSCRIBE_API_KEY"} {
			if v, ok := vars[k]; !ok || v != "" {
				t.Errorf("worker %s: %s=%q, want set and empty", id, k, v)
			}
		}
		for k, v := range vars {
			if strings.Contains(v, bottest.Token) {
				t.Errorf("worker %s: %s holds the bot token", id, k)
			}
		}
		if vars["ODEK_API_KEY"] != apiKey {
			t.Errorf("worker %s lacks the model key", id)
		}
		if _, ok := vars["REDIS_PASSWORD"]; ok {
			t.Errorf("worker %s has REDIS_PASSWORD as a variable of its own", id)
		}
	}
	for _, svc := range []string{"bot", "worker"} {
		id := e.ids(svc)[0]
		if out := strings.TrimSpace(e.docker(t, "inspect", "-f", "{{.HostConfig.Init}}", id)); out != "true" {
			t.Errorf("%s: HostConfig.Init = %s, want true (docker-init as PID 1)", svc, out)
		}
	}
	redis := e.ids("redis")[0]
	if out, _ := e.dockerErr("exec", redis, "env", "-u", "REDISCLI_AUTH", "redis-cli", "ping"); !strings.Contains(out, "NOAUTH") {
		t.Errorf("redis answered a client without the password: %q", out)
	}
	out := e.docker(t, "exec", e.ids("worker")[0], "env")
	if strings.Contains(out, bottest.Token) {
		t.Error("the bot token is in a worker process's environment")
	}
	if !strings.Contains(out, "ODEK_API_KEY=") {
		t.Errorf("`docker exec worker env` shows no ODEK_API_KEY: %s", out)
	}
	// The bot image is distroless (no env binary): its process environment
	// is the container's Config.Env.
	bot := e.ids("bot")[0]
	vars := e.inspectEnv(t, bot)
	if v, ok := vars["ODEK_API_KEY"]; !ok || v != "" {
		t.Errorf("bot: ODEK_API_KEY=%q, want set and empty", v)
	}
	for k, v := range vars {
		if strings.Contains(v, apiKey) {
			t.Errorf("bot: %s holds the model key", k)
		}
	}
	if vars["TELEGRAM_BOT_TOKEN"] != bottest.Token {
		t.Error("bot lacks its token")
	}
}

// odek doctor exits 0 in a worker container, with the sandbox verified.
func (e *env) checkDoctor(t *testing.T) {
	for _, id := range e.ids("worker")[:1] {
		out, err := e.dockerErr("exec", id, "odek", "doctor")
		t.Logf("odek doctor in %s:\n%s", id[:12], out)
		if err != nil {
			t.Fatalf("odek doctor in a worker: %v", err)
		}
		if !strings.Contains(out, "a confined process read its root") || !strings.Contains(out, "odek worker and odek-bot: confined;") {
			t.Errorf("odek doctor does not report the worker's sandbox active")
		}
	}
}

// A user outside the allowlist is told their id and starts no job.
func (e *env) checkStranger(t *testing.T) {
	before := e.llm.calls()
	e.tg.UserMessage(6666, 6666, "let me in")
	e.tg.Wait(t, step, "refusal", func(s *bottest.Server) bool { return len(s.Visible(6666)) == 1 })
	if v := e.tg.Visible(6666)[0]; !strings.Contains(v, "6666") {
		t.Errorf("refusal %q does not name the user id", v)
	}
	if n := e.llm.calls(); n != before {
		t.Errorf("a stranger's message reached the model (%d calls)", n-before)
	}
}

// The footer as the bot sends it (Telegram HTML): italic,
// "N tokens · [$cost · ]T s" on the message's last line.
var footerRE = regexp.MustCompile(`(?m)^<i>[0-9,]+ tokens · .*s</i>$`)

// A message gets an answer, ended by the usage footer.
func (e *env) checkAnswer(t *testing.T) {
	e.tg.UserMessage(user, user, "hello compose")
	m := e.waitReply(t, "compose says hello")
	if !footerRE.MatchString(plain(m.Text)) {
		t.Errorf("reply without a usage footer: %q", m.Text)
	}
}

// A slow job's status message is edited live from the progress stream
// (the model holds its answer until the test has seen the edit), then
// removed when the answer comes.
func (e *env) checkStatusEdit(t *testing.T) {
	e.tg.UserMessage(user, user, "slow job")
	var status bottest.Message
	e.tg.Wait(t, step, "status message edited with the tool", func(s *bottest.Server) bool {
		for _, m := range s.Messages(user) {
			if m.Edits > 0 && !m.Deleted && strings.Contains(plain(m.Text), "write_file") {
				status = m
				return true
			}
		}
		return false
	})
	e.llm.release("slow job")
	e.waitReply(t, "slow job done")
	for _, m := range e.tg.Messages(user) {
		if m.ID == status.ID && !m.Deleted {
			t.Errorf("status message %d not removed after the answer: %q", m.ID, m.Text)
		}
	}
}

// A shell call asks in the chat with an inline keyboard; pressing approve
// lets it run on the worker and the answer reports its output.
func (e *env) checkApproval(t *testing.T) {
	e.tg.UserMessage(user, user, "approve this")
	var kb bottest.Message
	e.tg.Wait(t, step, "approval keyboard", func(s *bottest.Server) bool {
		for _, m := range s.Messages(user) {
			if len(m.Keyboard) > 0 && !m.Deleted && strings.Contains(plain(m.Text), "wants to use shell") {
				kb = m
				return true
			}
		}
		return false
	})
	e.tg.PressButton(user, user, kb.ID, kb.Keyboard[0][0])
	e.tg.WaitCalls(t, step, func(c []bottest.Call) bool { return len(c) > 0 }, "answerCallbackQuery")
	m := e.waitReply(t, "approval round trip")
	if !strings.Contains(plain(m.Text), "shell said approved-output") {
		t.Errorf("the approved command's output did not reach the model: %q", m.Text)
	}
	// The command also printed its environment: a job's shell sees
	// neither REDIS_URL nor the Redis password.
	if !strings.Contains(plain(m.Text), "env printed") || strings.Contains(plain(m.Text), "LEAK") {
		t.Errorf("the job's shell environment: %q", m.Text)
	}
	if !e.visible("✅ Approved once") {
		t.Errorf("no approval outcome in the chat: %q", e.tg.Visible(user))
	}
}

var artifactRE = regexp.MustCompile(`📎 (\S+) · report\.md`)

const reportBody = "# compose report\n\nwritten by a worker container\n"

// A file a worker writes is listed under the answer and /artifact sends
// it: the bot reads it from the shared artifacts volume.
func (e *env) checkArtifact(t *testing.T) string {
	e.tg.UserMessage(user, user, "write a report")
	m := e.waitReply(t, "report written")
	sub := artifactRE.FindStringSubmatch(plain(m.Text))
	if sub == nil {
		t.Fatalf("no artifact line for report.md in %q", m.Text)
	}
	id := sub[1]
	e.sendDocument(t, id)
	return id
}

func (e *env) sendDocument(t *testing.T, id string) {
	t.Helper()
	before := len(e.tg.Calls("sendDocument"))
	e.tg.UserMessage(user, user, "/artifact "+id)
	calls := e.tg.WaitCalls(t, step, func(c []bottest.Call) bool { return len(c) > before }, "sendDocument")
	if got := string(calls[before].File); got != reportBody || calls[before].FileName != "report.md" {
		t.Errorf("/artifact %s sent %q %q, want report.md %q", id, calls[before].FileName, got, reportBody)
	}
}

// docker kill of the worker inside a job's model call: another worker
// takes the job over after the lease, and the chat gets exactly one answer.
func (e *env) checkKill(t *testing.T) {
	e.tg.UserMessage(user, user, "survive a kill")
	ip := e.llm.waitArrival(t, "survive a kill")
	victim := e.containerByIP(t, "worker", ip)
	t.Logf("killing worker %s (%s) inside the job", victim[:12], ip)
	e.docker(t, "kill", victim)
	e.waitReply(t, "survived the kill")
	e.barrier(t)
	if n := e.count("survived the kill"); n != 1 {
		t.Errorf("answers = %d, want exactly 1: %q", n, e.tg.Visible(user))
	}
	// Back to three healthy workers (the killed one may have been
	// restarted by its restart policy already).
	e.compose("up", "-d", "--scale", "worker=3")
	e.waitHealthy(3)
}

// docker compose restart redis while a job waits on the model: the job
// still completes, once.
func (e *env) checkRedisRestart(t *testing.T) {
	e.tg.UserMessage(user, user, "outlast redis")
	e.llm.waitArrival(t, "outlast redis")
	e.compose("restart", "redis")
	e.waitHealthy(3)
	e.llm.release("outlast redis")
	e.waitReply(t, "outlasted redis")
	e.barrier(t)
	if n := e.count("outlasted redis"); n != 1 {
		t.Errorf("answers = %d, want exactly 1: %q", n, e.tg.Visible(user))
	}
}

// docker compose down && up: the conversation (Redis AOF on its volume)
// and the bot's state (artifact ids, on the bot-state volume) survive.
func (e *env) checkDownUp(t *testing.T, artifact string) {
	e.timed("docker compose down", func() { e.compose("down") })
	e.timed("docker compose up -d", func() { e.compose("up", "-d", "--scale", "worker=3") })
	e.waitHealthy(3)
	e.tg.UserMessage(user, user, "do you remember")
	e.waitReply(t, "session kept")
	if artifact != "" {
		e.sendDocument(t, artifact)
	}
}

// ---- the fake model ----

// fakeModel is llmtest's handler with a script keyed by the job's goal
// (the last user message), recording which container called for which
// goal and holding chosen answers until the test releases them.
type fakeModel struct {
	h      *llmtest.Handler
	secret string // Redis' password: a tool result holding it is a leak

	mu       sync.Mutex
	n        int
	arrivals map[string]chan string // goal → caller IPs
	first    map[string]time.Time   // goal → when its first call came
	released map[string]chan struct{}
	seen     map[string]bool
}

// held are the goals whose answers wait for release.
var held = []string{"slow job", "outlast redis", "survive a kill", "ride out a failover"}

// watched are goals whose callers and first call's time are recorded
// without holding them.
var watched = []string{"after the failover"}

func newFakeModel(t *testing.T) *fakeModel {
	f := &fakeModel{arrivals: map[string]chan string{}, first: map[string]time.Time{},
		released: map[string]chan struct{}{}, seen: map[string]bool{}}
	for _, g := range held {
		f.arrivals[g] = make(chan string, 8)
		f.released[g] = make(chan struct{})
	}
	for _, g := range watched {
		f.arrivals[g] = make(chan string, 8)
	}
	f.h = llmtest.NewScriptHandler(f.turn).RequireAPIKey(apiKey)
	t.Cleanup(func() {
		f.mu.Lock()
		for g, ch := range f.released {
			select {
			case <-ch:
			default:
				close(ch)
			}
			delete(f.released, g)
		}
		f.mu.Unlock()
		f.h.Close()
	})
	return f
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	body, err := io.ReadAll(io.LimitReader(r.Body, llmtest.MaxRequestBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The script sees only the request; tell it the caller through the
	// body's goal: record the caller here, before the handler runs.
	for g, ch := range f.arrivals { // not written after newFakeModel
		if firstCallOf(body, g) {
			f.mu.Lock()
			if _, ok := f.first[g]; !ok {
				f.first[g] = time.Now()
			}
			f.mu.Unlock()
			select {
			case ch <- host:
			default: // nobody reads more than a few
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.h.ServeHTTP(w, r)
}

// firstCallOf reports whether the request is a job's first model call
// for goal: goal is in the last user message and no tool result follows
// it (earlier jobs of the same chat are in the history, with theirs).
func firstCallOf(body []byte, goal string) bool {
	i := bytes.LastIndex(body, []byte(`"role":"user"`))
	return i >= 0 && bytes.Contains(body[i:], []byte(goal)) && !bytes.Contains(body[i:], []byte(`"role":"tool"`))
}

// firstCall is when the model was first asked about goal (a watched or
// held one), or zero.
func (f *fakeModel) firstCall(goal string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first[goal]
}

func (f *fakeModel) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *fakeModel) release(goal string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.released[goal]; ok {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

func (f *fakeModel) waitArrival(t *testing.T, goal string) string {
	t.Helper()
	select {
	case ip := <-f.arrivals[goal]:
		return ip
	case <-time.After(step):
		t.Fatalf("the model was not asked about %q within %v", goal, step)
		return ""
	}
}

func (f *fakeModel) hold(goal string) {
	f.mu.Lock()
	ch := f.released[goal]
	f.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(3 * time.Minute):
	}
}

// turn decides the model's reply from the conversation.
func (f *fakeModel) turn(r llmtest.Recorded) llmtest.Turn {
	goal, toolResult := "", ""
	for _, m := range r.Messages {
		switch m.Role {
		case "user":
			goal, toolResult = m.Content, ""
		case "tool":
			toolResult = m.Content
		}
	}
	after := r.LastMessage().Role == "tool"
	history := string(r.Body)
	switch {
	case strings.Contains(goal, "hello compose"):
		return llmtest.Reply("compose says hello")
	case strings.Contains(goal, "slow job"):
		if !after {
			return llmtest.CallTools(llmtest.Call{Name: "write_file", Arguments: `{"path":"notes.txt","content":"slow"}`})
		}
		f.hold("slow job")
		return llmtest.Reply("slow job done")
	case strings.Contains(goal, "approve this"):
		if !after {
			return llmtest.CallTools(llmtest.Call{Name: "shell", Arguments: `{"command":"sh -c 'echo approved-output; env'"}`})
		}
		out := "nothing"
		if strings.Contains(toolResult, "approved-output") {
			out = "approved-output"
		}
		if strings.Contains(toolResult, "PATH=") {
			out += ", env printed"
		}
		if strings.Contains(toolResult, "REDIS_URL") || (f.secret != "" && strings.Contains(toolResult, f.secret)) {
			out += ", LEAK: the shell saw Redis' URL or password"
		}
		return llmtest.Reply("approval round trip: shell said " + out)
	case strings.Contains(goal, "write a report"):
		if !after {
			return llmtest.CallTools(llmtest.Call{Name: "write_file", Arguments: fmt.Sprintf(`{"path":"report.md","content":%q}`, reportBody)})
		}
		return llmtest.Reply("report written")
	case strings.Contains(goal, "survive a kill"):
		if f.once("survive a kill") {
			f.hold("survive a kill") // the first caller is killed meanwhile
		}
		return llmtest.Reply("survived the kill")
	case strings.Contains(goal, "outlast redis"):
		f.hold("outlast redis")
		return llmtest.Reply("outlasted redis")
	case strings.Contains(goal, "sentinel remembers"):
		if strings.Contains(history, "hello compose") && strings.Contains(history, "compose says hello") {
			return llmtest.Reply("sentinel kept the session")
		}
		return llmtest.Reply("sentinel lost the session")
	case strings.Contains(goal, "ride out a failover"):
		f.hold("ride out a failover")
		return llmtest.Reply("rode out the failover")
	case strings.Contains(goal, "after the failover"):
		// The job before it in this chat was answered across the
		// failover: its turn must be in the session.
		if strings.Contains(history, "rode out the failover") {
			return llmtest.Reply("answered after the failover, history kept")
		}
		return llmtest.Reply("answered after the failover, history LOST")
	case strings.Contains(goal, "old master is back"):
		return llmtest.Reply("answered with the old master back")
	case strings.Contains(goal, tracingGoal):
		if !after {
			return llmtest.CallTools(llmtest.Call{Name: "shell", Arguments: `{"command":"echo tp=$TRACEPARENT"}`})
		}
		return llmtest.Reply("the job's shell saw " + strings.TrimSpace(toolResult))
	case strings.Contains(goal, "do you remember"):
		if strings.Contains(history, "hello compose") && strings.Contains(history, "compose says hello") {
			return llmtest.Reply("session kept")
		}
		return llmtest.Reply("session lost")
	}
	return llmtest.Reply("ok")
}

// once reports true the first time it is called for key.
func (f *fakeModel) once(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[key] {
		return false
	}
	f.seen[key] = true
	return true
}

// ---- the chat ----

// plain drops MarkdownV2's escapes, so checks read the text as the chat
// shows it.
func plain(s string) string { return strings.ReplaceAll(s, "\\", "") }

// waitReply waits for a visible bot message containing sub and returns it.
func (e *env) waitReply(t *testing.T, sub string) bottest.Message {
	t.Helper()
	var got bottest.Message
	e.tg.Wait(t, step, "reply "+sub, func(s *bottest.Server) bool {
		for _, m := range s.Messages(user) {
			if !m.Deleted && strings.Contains(plain(m.Text), sub) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func (e *env) visible(sub string) bool {
	for _, m := range e.tg.Visible(user) {
		if strings.Contains(plain(m), sub) {
			return true
		}
	}
	return false
}

func (e *env) count(sub string) int {
	n := 0
	for _, m := range e.tg.Visible(user) {
		if strings.Contains(plain(m), sub) {
			n++
		}
	}
	return n
}

// barrier sends /status and waits for its answer: results are delivered in
// the chat's order, so a duplicate answer would have come before it.
func (e *env) barrier(t *testing.T) {
	t.Helper()
	before := e.count("Idle")
	e.tg.UserMessage(user, user, "/status")
	e.tg.Wait(t, step, "/status reply", func(*bottest.Server) bool { return e.count("Idle") > before })
}

// ---- docker ----

func (e *env) timed(what string, f func()) {
	start := time.Now()
	f()
	e.t.Logf("%s: %s", what, time.Since(start).Round(100*time.Millisecond))
}

func (e *env) composeErr(args ...string) (string, error) {
	pre := []string{"compose"}
	for _, f := range e.files {
		pre = append(pre, "-f", f)
	}
	for _, p := range e.profiles {
		pre = append(pre, "--profile", p)
	}
	cmd := exec.Command("docker", append(pre, args...)...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "COMPOSE_PROJECT_NAME="+project)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (e *env) compose(args ...string) string {
	e.t.Helper()
	out, err := e.composeErr(args...)
	if err != nil {
		e.t.Fatalf("docker compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (e *env) dockerErr(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	return string(out), err
}

func (e *env) docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.dockerErr(args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ids returns the running containers of a service.
func (e *env) ids(service string) []string {
	e.t.Helper()
	ids := strings.Fields(e.compose("ps", "-q", service))
	if len(ids) == 0 {
		e.t.Fatalf("no running %s container", service)
	}
	return ids
}

func (e *env) inspectEnv(t *testing.T, id string) map[string]string {
	t.Helper()
	out := e.docker(t, "inspect", "-f", `{{range .Config.Env}}{{println .}}{{end}}`, id)
	vars := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

func (e *env) containerByIP(t *testing.T, service, ip string) string {
	t.Helper()
	for _, id := range e.ids(service) {
		out := e.docker(t, "inspect", "-f", `{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}`, id)
		for _, a := range strings.Fields(out) {
			if a == ip {
				return id
			}
		}
	}
	t.Fatalf("no %s container has address %s", service, ip)
	return ""
}

// waitHealthy waits until e.services (redis and the bot, and with the
// Sentinel file the replica and the sentinels) and the given number of
// workers are running and healthy (healthchecks run every 5 s and 15 s).
func (e *env) waitHealthy(workers int) {
	e.t.Helper()
	want := map[string]int{"worker": workers}
	for s, n := range e.services {
		want[s] = n
	}
	deadline := time.Now().Add(stage)
	var last string
	for time.Now().Before(deadline) {
		out, _ := e.composeErr("ps", "-a", "--format", `{{.Service}} {{.State}} {{.Health}}`)
		last = out
		got := map[string]int{}
		ok := true
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			if len(f) == 3 && f[1] == "running" && f[2] == "healthy" || len(f) == 2 && f[1] == "running" && e.unchecked[f[0]] {
				got[f[0]]++
			} else if f[1] == "running" {
				ok = false
			}
		}
		for s, n := range want {
			if got[s] != n {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(time.Second) // polling the engine; there is no event to wait on
	}
	e.t.Fatalf("services not healthy within %v:\n%s", stage, last)
}

// bridgeGateway is the host's address on Docker's default bridge
// (docker0), which containers on any compose network reach.
func bridgeGateway(t *testing.T) string {
	out, err := exec.Command("docker", "network", "inspect", "bridge", "-f",
		`{{range .IPAM.Config}}{{.Gateway}} {{end}}{{index .Options "com.docker.network.bridge.name"}}`).CombinedOutput()
	if err != nil {
		t.Fatalf("docker network inspect bridge: %v %s", err, out)
	}
	f := strings.Fields(string(out))
	for _, a := range f {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			return a
		}
	}
	// The engine often records no gateway for the default bridge: take
	// the bridge interface's own address.
	name := "docker0"
	if len(f) > 0 {
		name = f[len(f)-1]
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("the default bridge's interface %s: %v", name, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatalf("the default bridge %s has no IPv4 address", name)
	return ""
}

// serve serves h on all interfaces (the containers reach it through the
// bridge) and returns its URL with host 0.0.0.0.
func serve(t *testing.T, h http.Handler) string {
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// reverseProxy forwards to the fake Bot API, which listens on loopback.
func reverseProxy(t *testing.T, target string) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	// A long poll the bot abandons (it stops, or restarts) is not an error
	// worth a log line; anything else answers 502 as a real proxy would.
	p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() == nil {
			t.Logf("Bot API proxy: %s %s: %v", r.Method, r.URL.Path, err)
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	return p
}

// copyRepo copies the repository's tracked and untracked-but-not-ignored
// files into a temporary project directory, so the test's .env never
// touches a developer's checkout; layer caching keys on content, so a
// rebuild from an unchanged tree is cached.
func copyRepo(t *testing.T) string {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	src := strings.TrimSpace(string(root))
	dst := filepath.Join(os.TempDir(), "odek-compose-test")
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf - | tar -C "$1" -xf -`, "bash", dst)
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copying the repository: %v %s", err, out)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dst) })
	return dst
}

// writeEnv writes dir/name from dir/name.example with the given values.
func writeEnv(t *testing.T, dir, name string, set map[string]string) {
	b, err := os.ReadFile(filepath.Join(dir, name+".example"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			if v, ok := set[k]; ok {
				line = k + "=" + v
				seen[k] = true
			}
		}
		out = append(out, line)
	}
	for k := range set {
		if !seen[k] {
			t.Fatalf("%s.example has no %s line", name, k)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(out, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}
