package main_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/schedule"
)

// `odek schedule … --store PATH` works on odek-bot's embedded database,
// where the bot keeps its schedules: what it adds is in that database
// (read back through the store's own KV), list, pause and rm reach it,
// and while a process holds the database the command fails, naming why.
func TestScheduleCLIOnTheEmbeddedStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	st, err := estore.Open(path, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	env := []string{"REDIS_URL=", "ODEK_HOME=" + t.TempDir()}
	run := func(args ...string) runOut {
		t.Helper()
		return runOdekEnv(t, "http://127.0.0.1:1/v1", t.TempDir(), env, append([]string{"schedule"}, args...)...)
	}
	add := run("add", "--store", path, "--chat", "7", "--every", "2h", "look at the inbox")
	if add.code != 0 {
		t.Fatalf("add: %d %s", add.code, add.stderr)
	}
	id := strings.TrimSpace(add.stdout)
	if out := run("list", "--store", path); out.code != 0 || !strings.Contains(out.stdout, id) {
		t.Fatalf("list: %d %q %s", out.code, out.stdout, out.stderr)
	}
	if out := run("pause", "--store", path, id); out.code != 0 {
		t.Fatalf("pause: %d %s", out.code, out.stderr)
	}
	st, err = estore.Open(path, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.NewKV(st).Get(context.Background(), id)
	if err != nil || s.Enabled || s.ChatID != 7 {
		t.Fatalf("in the database: %+v %v", s, err)
	}
	// Held by another process (here: this one): refused with the reason.
	if out := run("list", "--store", path); out.code != 69 || !strings.Contains(out.stderr, "odek schedule list") {
		t.Fatalf("list while held: %d %s", out.code, out.stderr)
	}
	st.Close()
	if out := run("rm", "--store", path, id); out.code != 0 {
		t.Fatalf("rm: %d %s", out.code, out.stderr)
	}
	if out := run("show", "--store", path, id); out.code != 1 {
		t.Fatalf("show after rm: %d %s", out.code, out.stderr)
	}
}
