#!/usr/bin/env bash
# Builds Jaeger's all-in-one program (the real OTLP receiver and trace store
# the tracing tests export to; see internal/telemetry/telemetrytest) from its
# Go module, pinned, in a throwaway module outside the repository, so odek's
# go.mod never lists it. The binary is kept in a cache directory and reused
# while it is there; the script prints its path on stdout (progress and the
# build time go to stderr). Use once per CI run:
#
#   export ODEK_JAEGER_BIN="$(bash test/otel/build-jaeger.sh)"
#   export ODEK_REQUIRE_OTEL=1
#
# With --if-cached it builds nothing: it prints the cached binary's path,
# or exits 1 when there is none (.ci/run runs the Jaeger stages only then:
# a cold build takes far longer than CI's budget, docs/OBSERVABILITY.md).
#
# Environment: ODEK_OTEL_CACHE (default ~/.cache/odek-otel) holds the binary.
set -euo pipefail

version="v1.75.0"
cache="${ODEK_OTEL_CACHE:-${HOME:-/root}/.cache/odek-otel}"
bin="$cache/jaeger-$version/jaeger"

if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
	echo "build-jaeger: cached $bin" >&2
	echo "$bin"
	exit 0
fi
if [ "${1:-}" = "--if-cached" ]; then
	echo "build-jaeger: no cached $bin" >&2
	exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$bin")"
start=$(date +%s)
(
	cd "$work"
	go mod init odek.local/jaeger-build >/dev/null 2>&1
	# Two cores shared with the tests: build at a lower priority.
	nice -n 10 go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version" >&2
	GOFLAGS=-buildvcs=false CGO_ENABLED=0 nice -n 10 go build -trimpath -o "$bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger >&2
)
mv "$bin.tmp" "$bin"
echo "build-jaeger: built $bin in $(($(date +%s) - start)) s" >&2
echo "$bin"
