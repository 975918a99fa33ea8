package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinkedPackages keeps what start-up pays for out of the binary (issue
// 25): the gRPC stack and the protobuf reflection runtime cost ~18 MB of
// binary and ~5 MiB of every `odek` process's resident set, although a run
// without tracing uses neither. internal/telemetry encodes OTLP itself.
func TestLinkedPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	banned := []string{"google.golang.org/grpc", "google.golang.org/protobuf/",
		"go.opentelemetry.io/otel/exporters/otlp/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(pkg, b) {
				t.Errorf("odek links %s", pkg)
			}
		}
	}
}
