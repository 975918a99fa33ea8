//go:build unix

package subagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/events"
)

// Slots are flock'd files: a slot taken (through another open file, as
// another process would) is not given out again until it is released.
func TestSlotPool(t *testing.T) {
	p, err := newPool(2)
	if err != nil {
		t.Fatal(err)
	}
	r1, ok1 := p.try("t")
	r2, ok2 := p.try("t")
	if !ok1 || !ok2 {
		t.Fatal("two slots of two not taken")
	}
	if _, ok := p.try("t"); ok {
		t.Fatal("a third slot was given out")
	}
	// A child process sees the same slots through SlotsEnv.
	q, err := openPool(p.dir)
	if err != nil || q.n != 2 {
		t.Fatalf("openPool: %+v %v", q, err)
	}
	if _, err := q.acquire(context.Background(), false, "t"); !errors.Is(err, ErrProcessCap) || !strings.Contains(err.Error(), "subagent.max_processes") {
		t.Fatalf("nested acquire with every slot taken: %v", err)
	}
	r1()
	r3, err := q.acquire(context.Background(), true, "t")
	if err != nil {
		t.Fatal(err)
	}
	r2()
	r3()
	ctx, cancel := context.WithCancel(context.Background())
	held := []func(){}
	for range 2 {
		r, _ := p.try("t")
		held = append(held, r)
	}
	cancel()
	if _, err := p.acquire(ctx, true, "t"); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting acquire after cancel: %v", err)
	}
	for _, r := range held {
		r()
	}
	if _, err := openPool(t.TempDir()); err == nil {
		t.Error("openPool of a directory without slots")
	}
}

// A nested run (depth 1) whose tree has no free slot refuses its tasks at
// once with a clear error, starting no process.
func TestNestedDelegateRefusedAtTheProcessCap(t *testing.T) {
	p, err := newPool(1)
	if err != nil {
		t.Fatal(err)
	}
	release, _ := p.try("t")
	marker := filepath.Join(t.TempDir(), "started")
	script := filepath.Join(t.TempDir(), "odek")
	os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\necho '{\"status\":\"success\"}'\n"), 0o700)
	d := NewDelegateTool(Options{Executable: script, Depth: 1, Environ: []string{"PATH=" + os.Getenv("PATH"), SlotsEnv + "=" + p.dir},
		Emit: func(context.Context, events.Type, map[string]any) {}})
	res, err := d.Run(context.Background(), []byte(`{"tasks":[{"goal":"a"},{"goal":"b"}]}`))
	if err != nil || !res.IsError || strings.Count(res.Text, "sub-agent process cap is reached") != 2 || !strings.Contains(res.Text, "1 sub-agent processes already run") {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child was started past the cap")
	}
	release()
	res, err = d.Run(context.Background(), []byte(`{"tasks":[{"goal":"a"}]}`))
	if err != nil || res.IsError {
		t.Fatalf("with a free slot: %+v %v", res, err)
	}
}

// A top-level run waits for a slot instead (all three tasks run, one at a
// time); its children learn the slot directory.
func TestTopLevelDelegateWaitsForASlot(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "odek")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"$"+SlotsEnv+"\" > "+dir+"/slots-$$\necho '{\"status\":\"success\"}'\n"), 0o700)
	d := NewDelegateTool(Options{Executable: script, Environ: []string{"PATH=" + os.Getenv("PATH")},
		Settings: Settings{MaxProcesses: 1, MaxConcurrency: 4},
		Emit:     func(context.Context, events.Type, map[string]any) {}})
	res, err := d.Run(context.Background(), []byte(`{"tasks":[{"goal":"a"},{"goal":"b"},{"goal":"c"}]}`))
	if err != nil || res.IsError || strings.Count(res.Text, ": success") != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "slots-*"))
	p, _ := d.pool()
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) != p.dir {
			t.Errorf("a child got %s=%q, want %q", SlotsEnv, b, p.dir)
		}
	}
	if len(files) != 3 {
		t.Errorf("%d children ran, want 3", len(files))
	}
}

func TestShareOf(t *testing.T) {
	for _, c := range []struct{ n, active, want int }{{8, 0, 8}, {8, 1, 8}, {8, 2, 4}, {8, 3, 2}, {8, 9, 1}, {1, 2, 1}} {
		if got := ShareOf(c.n, c.active); got != c.want {
			t.Errorf("ShareOf(%d, %d) = %d, want %d", c.n, c.active, got, c.want)
		}
	}
}
