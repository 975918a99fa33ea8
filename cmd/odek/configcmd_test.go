package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigShowAndEnv(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"api_key":"sk-secret-value","limits":{"max_tool_calls":5}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "odek.json"), []byte(`{"limits":{"max_tool_calls":2},"sandbox":{"mode":"off"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ODEK_HOME", home)
	t.Setenv("ODEK_MODEL", "env-model")
	t.Chdir(proj)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"config", "show"}, nil, &out, &errOut); err != nil {
		t.Fatalf("config show: %v\n%s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{"api_key", "[redacted]", "limits.max_tool_calls", "model", "env-model"} {
		if !strings.Contains(got, want) {
			t.Errorf("config show lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got+errOut.String(), "sk-secret-value") {
		t.Fatalf("the API key leaked:\n%s%s", got, errOut.String())
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(got, "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			rows[f[0]] = f[1:]
		}
	}
	for key, want := range map[string][2]string{
		"limits.max_tool_calls": {"2", "project"}, "model": {"env-model", "env"}, "api_key": {"[redacted]", "operator"}, "sandbox.mode": {"-", "default"},
	} {
		if r := rows[key]; len(r) != 2 || r[0] != want[0] || r[1] != want[1] {
			t.Errorf("%s = %v, want %v", key, r, want)
		}
	}
	// The effective window is stated: an unknown model gets the default.
	if !strings.Contains(got, "context_window.effective") || !strings.Contains(got, "32768 tokens for env-model (unknown model: conservative default)") {
		t.Errorf("config show does not state the effective context window:\n%s", got)
	}
	if !strings.Contains(errOut.String(), `"sandbox.mode": ignored`) {
		t.Errorf("no warning for the project's sandbox.mode off: %s", errOut.String())
	}

	out.Reset()
	if err := run(context.Background(), []string{"config", "env"}, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ODEK_API_KEY", "REDIS_URL", "ODEK_WORKER_CONCURRENCY", "ODEK_APPROVE_MCP", "OTEL_EXPORTER_OTLP_ENDPOINT", "TRACEPARENT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("config env lacks %s", want)
		}
	}
}

func TestWorkerEnvErrorNamesTheVariable(t *testing.T) {
	t.Setenv("ODEK_WORKER_CONCURRENCY", "lots")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"worker"}, nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "ODEK_WORKER_CONCURRENCY") || exitCode(err) != exitSetup {
		t.Fatalf("err = %v (code %d), want a setup error naming ODEK_WORKER_CONCURRENCY", err, exitCode(err))
	}
}
