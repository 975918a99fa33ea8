package telemetrytest

import (
	"os"
	"os/exec"
	"testing"
)

// peerBin is a real peer's binary: $env, else name on PATH, else "".
func peerBin(env, name string) string {
	if b := os.Getenv(env); b != "" {
		return b
	}
	b, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return b
}

// binOrSkip returns bin, or, when it is "", skips t — or fails it when
// ODEK_REQUIRE_OTEL names kind (Required) — saying how to get one.
func binOrSkip(t testing.TB, kind, bin, env, name, script string) string {
	t.Helper()
	if bin == "" {
		if Required(kind) {
			t.Fatalf("no %s binary (set %s or put %s on PATH; %s builds it) and %s is set", kind, env, name, script, EnvRequireOTel)
		}
		t.Skipf("no %s binary (%s or PATH); %s builds one", kind, env, script)
	}
	return bin
}

// retryStart starts a peer up to three times: a port picked free may be
// taken by another process before the peer binds it.
func retryStart[T any](t testing.TB, start func() (T, error)) T {
	t.Helper()
	var lastErr error
	for range 3 {
		v, err := start()
		if err == nil {
			return v
		}
		lastErr = err
	}
	t.Fatal(lastErr)
	var zero T
	return zero
}
