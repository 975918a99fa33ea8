package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The compose file's trace viewer (issue 24, docs/OBSERVABILITY.md): only
// with `--profile tracing`, a pinned image, published on this host's
// loopback only (traces name chats and jobs, and the viewer has no login),
// given none of the env files' secrets, and reachable under the name the
// env examples point odek at. test/compose's tracing stage brings it up.
func TestComposeTraceViewer(t *testing.T) {
	src, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	svc := parseYAML(t, string(src)).get("services", "trace-viewer")
	if svc == nil {
		t.Fatal("no trace-viewer service")
	}
	if p := svc.get("profiles").strings(); len(p) != 1 || p[0] != "tracing" {
		t.Errorf("trace-viewer: profiles %q, want [tracing] (a plain `up` must not start it)", p)
	}
	if img := svc.get("image").scalar; !regexp.MustCompile(`^jaegertracing/jaeger:\d+\.\d+\.\d+$`).MatchString(img) {
		t.Errorf("trace-viewer: image %q, want jaegertracing/jaeger pinned to a release", img)
	}
	ports := svc.get("ports").strings()
	if len(ports) == 0 {
		t.Error("trace-viewer: no published port for the UI")
	}
	for _, p := range ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("trace-viewer: port %q is published beyond this host's loopback", p)
		}
	}
	for _, k := range []string{"env_file", "environment", "volumes"} {
		if svc.get(k) != nil {
			t.Errorf("trace-viewer: has %s; it needs none of the instance's settings or data", k)
		}
	}
	for _, f := range []string{"bot.env.example", "worker.env.example"} {
		b, err := os.ReadFile("../../" + f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "OTEL_EXPORTER_OTLP_ENDPOINT=http://trace-viewer:4318") {
			t.Errorf("%s does not show the endpoint of the trace-viewer service", f)
		}
	}
}
