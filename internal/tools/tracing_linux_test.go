//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/telemetry"
)

// A shell command continues the run's trace (issue 24): TRACEPARENT and
// TRACESTATE of the caller's context reach it, replacing inherited ones,
// also inside the sandbox; without a trace the environment is the tool's.
// It fails on the shell without its telemetry lines.
func TestShellChildGetsTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := telemetry.FromMap(context.Background(), map[string]string{"traceparent": tp, "tracestate": "odek=1"})
	env := []string{"PATH=/usr/bin:/bin", "TRACEPARENT=00-inherited"}
	cmd := `{"command":"echo \"tp=$TRACEPARENT ts=$TRACESTATE\""}`

	// untraced is what a command sees without a trace: the inherited value,
	// or nothing in the sandbox, whose allowlist (sandbox.Env) drops it.
	check := func(t *testing.T, sh Tool, untraced string) {
		res, err := sh.Run(traced, json.RawMessage(cmd))
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, res, false, "tp="+tp+" ts=odek=1")
		res, err = sh.Run(context.Background(), json.RawMessage(cmd))
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, res, false, untraced)
	}
	t.Run("plain", func(t *testing.T) {
		check(t, builtin(t, Options{WorkDir: t.TempDir(), Env: env}, "shell"), "tp=00-inherited ts=\n")
	})
	t.Run("sandboxed", func(t *testing.T) {
		if abi := sandbox.ABI(); abi < sandbox.RequiredABI {
			if os.Getenv("ODEK_REQUIRE_LANDLOCK") != "" {
				t.Fatalf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
			}
			t.Skipf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
		}
		dir := t.TempDir()
		spec, err := sandbox.NewSpec(sandbox.Settings{}, sandbox.Paths{Root: dir, TempDir: t.TempDir()}, sandbox.Host)
		if err != nil {
			t.Fatal(err)
		}
		jail, err := sandbox.NewJail(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer jail.Close()
		check(t, builtin(t, Options{WorkDir: dir, Confine: true, Sandbox: jail, Env: env}, "shell"), "tp= ts=\n")
	})
}
