package subagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
)

// Each chat gets its share of the worker's slots: chat A floods the
// worker with eight tasks on two slots; chat B's one task, waiting behind
// them, takes the first slot one of A's children gives back — not A's
// next task, although seven of them wait too — and a nested run of A's
// tree at its share is refused while B uses the rest.
func TestEachChatGetsItsShareOfTheSlots(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "odek")
	os.WriteFile(script, []byte(`#!/bin/sh
goal=$(sed -n 's/.*"goal":"\([^"]*\)".*/\1/p' "$3")
echo "$goal" >> `+dir+`/started
while [ ! -e `+dir+`/release-$goal ]; do sleep 0.02; done
echo '{"status":"success"}'
`), 0o700)
	started := func() []string {
		b, _ := os.ReadFile(filepath.Join(dir, "started"))
		return strings.Fields(string(b))
	}
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: started %v", what, started())
			}
		}
	}
	settings := Settings{MaxProcesses: 2, MaxConcurrency: 8}
	quiet := func(context.Context, events.Type, map[string]any) {}
	env := []string{"PATH=" + os.Getenv("PATH")}
	a := NewDelegateTool(Options{Executable: script, Environ: env, WorkDir: t.TempDir(), Settings: settings, Emit: quiet})
	b := NewDelegateTool(Options{Executable: script, Environ: env, WorkDir: t.TempDir(), Settings: settings, Emit: quiet})
	pa, _ := a.pool()
	if pb, _ := b.pool(); pa != pb {
		t.Fatal("the two chats' runs do not share the worker's pool")
	}
	var wg sync.WaitGroup
	results := make([]string, 2)
	run := func(k int, d *Delegate, tasks string) {
		defer wg.Done()
		res, err := d.Run(context.Background(), []byte(tasks))
		results[k] = fmt.Sprint(res.Text, err)
	}
	wg.Add(1)
	go run(0, a, `{"tasks":[{"goal":"a1"},{"goal":"a2"},{"goal":"a3"},{"goal":"a4"},{"goal":"a5"},{"goal":"a6"},{"goal":"a7"},{"goal":"a8"}]}`)
	waitUntil("chat A takes both slots", func() bool { return len(started()) == 2 })
	wg.Add(1)
	go run(1, b, `{"tasks":[{"goal":"b1"}]}`)
	waitUntil("chat B waits", func() bool {
		pa.waiters.mu.Lock()
		defer pa.waiters.mu.Unlock()
		return pa.waiting[b.tenant()] > 0
	})

	// A nested run of chat A's tree (a child's own delegate) holds its
	// share already: refused at once, naming the share.
	nested := NewDelegateTool(Options{Executable: script, Depth: 1, Settings: settings, Emit: quiet,
		Environ: append(env, SlotsEnv+"="+pa.dir, TenantEnv+"="+a.tenant())})
	if release, err := nested.takeSlot(context.Background(), 0); err == nil {
		release()
		t.Error("a nested run of chat A took a slot beyond the chat's share")
	}

	first := started()[0]
	os.WriteFile(filepath.Join(dir, "release-"+first), nil, 0o600)
	waitUntil("a third task starts", func() bool { return len(started()) == 3 })
	if got := started()[2]; got != "b1" {
		t.Fatalf("the freed slot went to %s, not to chat B's waiting task", got)
	}
	for _, g := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "b1"} {
		os.WriteFile(filepath.Join(dir, "release-"+g), nil, 0o600)
	}
	wg.Wait()
	if strings.Count(results[0], ": success") != 8 || strings.Count(results[1], ": success") != 1 {
		t.Fatalf("results: %q", results)
	}
}
