package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue/queuetest"
)

type doctorOut struct {
	OK     bool `json:"ok"`
	Checks []struct {
		Name, Status, Detail string
	} `json:"checks"`
}

func (d doctorOut) status(name string) string {
	for _, c := range d.Checks {
		if c.Name == name {
			return c.Status
		}
	}
	return ""
}

// odek doctor passes on this machine with a real Redis and a model that
// answers, and fails, naming the part, when Redis or the model is gone.
func TestDoctor(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	srv := llmtest.New(t, llmtest.Reply("ok"))
	rd := queuetest.StartServer(t, queuetest.ServerOptions{})
	run := func(env []string, args ...string) (doctorOut, runOut) {
		t.Helper()
		out := runOdekEnv(t, srv.URL, t.TempDir(), env, append([]string{"doctor", "--json"}, args...)...)
		var d doctorOut
		if err := json.Unmarshal([]byte(out.stdout), &d); err != nil {
			t.Fatalf("doctor --json: %v\n%s\n%s", err, out.stdout, out.stderr)
		}
		return d, out
	}
	d, out := run([]string{"REDIS_URL=redis://" + rd.Addr + "/0"})
	if out.code != 0 || !d.OK {
		t.Fatalf("healthy machine: exit %d\n%s", out.code, out.stdout)
	}
	for _, name := range []string{"landlock", "sandbox", "surfaces", "redis", "model"} {
		if d.status(name) != "ok" {
			t.Errorf("%s = %q\n%s", name, d.status(name), out.stdout)
		}
	}
	if srv.Calls() != 1 {
		t.Errorf("the model was asked %d times, want 1", srv.Calls())
	}
	d, out = run([]string{"REDIS_URL=redis://127.0.0.1:1/0"}, "--no-model")
	if out.code != 1 || d.OK || d.status("redis") != "fail" || d.status("model") != "skip" {
		t.Fatalf("Redis gone: exit %d\n%s", out.code, out.stdout)
	}
	plain := runOdekEnv(t, "http://127.0.0.1:1/v1", t.TempDir(), nil, "doctor")
	if plain.code != 1 || !strings.Contains(plain.stdout, "fail  model") {
		t.Fatalf("model gone: exit %d\n%s", plain.code, plain.stdout)
	}
}

// odek doctor --redis reports the mode, the master and its replicas, and
// whether the key layout is cluster-safe, on a real 3+3 cluster; a bad URL
// fails naming the part that is wrong.
func TestDoctorRedisTopology(t *testing.T) {
	tp := queuetest.StartTopology(t, "cluster")
	out := runOdekEnv(t, "http://127.0.0.1:1/v1", t.TempDir(), nil, "doctor", "--json", "--no-model", "--redis", tp.URL)
	var d doctorOut
	if err := json.Unmarshal([]byte(out.stdout), &d); err != nil {
		t.Fatalf("doctor --json: %v\n%s\n%s", err, out.stdout, out.stderr)
	}
	detail := func(name string) string {
		for _, c := range d.Checks {
			if c.Name == name {
				return c.Detail
			}
		}
		return ""
	}
	if d.status("redis") != "ok" || !strings.Contains(detail("redis"), "cluster mode, master 127.0.0.1:") ||
		!strings.Contains(detail("redis"), "3 masters") || d.status("redis keys") != "ok" || !strings.Contains(detail("redis keys"), "{odek}:") {
		t.Fatalf("cluster: %s", out.stdout)
	}
	out = runOdekEnv(t, "http://127.0.0.1:1/v1", t.TempDir(), nil, "doctor", "--json", "--no-model", "--redis", "redis+sentinel://127.0.0.1:1")
	if err := json.Unmarshal([]byte(out.stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.status("redis") != "fail" || !strings.Contains(detail("redis"), "REDIS_URL path: no master name") {
		t.Fatalf("bad URL: %s", out.stdout)
	}
}
