#!/bin/sh
# One command for the sandbox's per-call and per-job figures
# (docs/BENCHMARKS.md, "The per-job supervisor (issue 21, round 4)"):
#
#   sudo sh bench/sandboxbench/compare.sh [base-ref] [calls]
#
# 1. BenchmarkJobCgroup of this tree and of base-ref,
#    interleaved, five rounds (base-ref defaults to d00d6ae, main before
#    round 4; both with this tree's benchmark file, which
#    reports CPU per job as cpu-ns/op);
# 2. bench/sandboxbench with `calls` calls of each kind (default 200):
#    sh -c true unconfined, through the helper per call (what base-ref
#    does), through the job's supervisor, an empty Go binary, and jobs of
#    one call each way, interleaved, CPU per call; then a quarter as many
#    with each call 100 ms after the last (-apart), as a job's calls come.
#
# Run as root from the repository's root: per-job cgroups need it.
set -eu
base=${1:-d00d6ae}
calls=${2:-200}
tmp=$(mktemp -d /tmp/sbcompare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git archive "$base" | tar -x -C "$tmp/base"
cp internal/sandbox/bench_linux_test.go "$tmp/base/internal/sandbox/"
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./internal/sandbox)
go test -c -o "$tmp/new.test" ./internal/sandbox
cd internal/sandbox
for r in 1 2 3 4 5; do
	printf '%s ' "round $r $base:"
	"$tmp/base.test" -test.run '^$' -test.bench 'BenchmarkJobCgroup$' -test.benchtime 300x | grep '^Benchmark'
	printf '%s ' "round $r this tree:"
	"$tmp/new.test" -test.run '^$' -test.bench 'BenchmarkJobCgroup$' -test.benchtime 300x | grep '^Benchmark'
done
cd ../..
uptime
go run ./bench/sandboxbench -n "$calls"
uptime
# The same with each call 100 ms after the last, as a job's calls come.
go run ./bench/sandboxbench -n "$((calls / 4))" -apart 100ms
uptime
