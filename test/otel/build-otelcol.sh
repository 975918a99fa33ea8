#!/usr/bin/env bash
# Builds otelcol-odek: an OpenTelemetry Collector with only the OTLP
# receiver and the file exporter (test/otel/otelcol, a module of its own,
# so odek's go.mod never lists the Collector), from the Go module proxy at
# the versions test/otel/otelcol/go.sum pins. The tracing tests use it as a
# real OTLP peer (internal/telemetry/telemetrytest.StartCollector). The
# binary is kept in a cache directory keyed by the hash of the module's
# files and reused while it is there; the script prints its path on stdout
# (progress and the build time go to stderr). Use once per CI run:
#
#   export ODEK_OTELCOL_BIN="$(bash test/otel/build-otelcol.sh)"
#   export ODEK_REQUIRE_OTEL=1
#
# Environment: ODEK_OTEL_CACHE (default ~/.cache/odek-otel) holds the binary.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/otelcol" && pwd)"
key="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)"
cache="${ODEK_OTEL_CACHE:-${HOME:-/root}/.cache/odek-otel}"
bin="$cache/otelcol-$key/otelcol-odek"

if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
	echo "build-otelcol: cached $bin" >&2
	echo "$bin"
	exit 0
fi

mkdir -p "$(dirname "$bin")"
start=$(date +%s)
(
	cd "$src"
	# Two cores shared with the tests: build at a lower priority.
	GOFLAGS="-buildvcs=false -mod=readonly" nice -n 10 go mod download >&2
	fetched=$(date +%s)
	echo "build-otelcol: modules in $((fetched - start)) s" >&2
	GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0 nice -n 10 go build -trimpath -o "$bin.tmp" . >&2
)
mv "$bin.tmp" "$bin"
echo "build-otelcol: built $bin in $(($(date +%s) - start)) s" >&2
echo "$bin"
