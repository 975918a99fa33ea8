#!/usr/bin/env bash
# The team instance tested for real: builds the repository's Dockerfile and
# runs docker-compose.yml with Docker Compose v2 on a real Docker engine,
# then drives it through the fake Telegram Bot API and the fake model
# (test/compose/compose_test.go). Run as root from anywhere in the
# repository; .ci/run runs it.
#
#   - starts dockerd (vfs storage driver) when none is running, and stops
#     what it started at the end;
#   - installs the Compose v2 CLI plugin, built from its Go module, when
#     `docker compose version` is not $COMPOSE_VERSION;
#   - builds the base images offline from image registries
#     (test/compose/base-images.sh), kept between runs, then odek's two
#     images from the Dockerfile, both beside the plugin's build, and with
#     ODEK_COMPOSE_TRACING=1 the trace viewer's (trace-viewer-image.sh);
#   - runs `go test ./test/compose` with ODEK_COMPOSE=1.
#
# Images are kept afterwards (odek-bot:local, odek-worker:local and the
# base images), so a second run on the same machine reuses their layers.
set -euo pipefail
export PATH="/usr/local/go/bin:${HOME:-/root}/go/bin:${PATH}"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
began=$(date +%s)
COMPOSE_VERSION="${COMPOSE_VERSION:-v2.40.3}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
say() { echo "compose-test: $*" >&2; }

apt_install() {
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 ||
		{ $SUDO apt-get update >/dev/null && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; }
}

# ---- the Docker engine ----
dockerd_pid=""
cleanup() {
	if [ -n "$dockerd_pid" ]; then
		say "stopping the dockerd this script started (pid $dockerd_pid)"
		$SUDO kill "$dockerd_pid" 2>/dev/null || true
		wait "$dockerd_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT
if ! docker info >/dev/null 2>&1; then
	command -v dockerd >/dev/null 2>&1 || apt_install docker.io
	say "starting dockerd (vfs)"
	$SUDO dockerd --storage-driver=vfs >/tmp/odek-compose-dockerd.log 2>&1 &
	dockerd_pid=$!
	for _ in $(seq 120); do
		docker info >/dev/null 2>&1 && break
		kill -0 "$dockerd_pid" 2>/dev/null || { tail -20 /tmp/odek-compose-dockerd.log >&2; exit 1; }
		sleep 0.5
	done
	docker info >/dev/null 2>&1 || { say "dockerd did not come up"; tail -20 /tmp/odek-compose-dockerd.log >&2; exit 1; }
fi
command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap

# ---- base images and odek's images, in the background ----
# The base images are debootstrap and image imports (the mirror and the
# disk), the plugin below is a Go build (the CPU), so they run side by side.
# Once the base images are there, odek's two images are built from the
# Dockerfile with the same builder, targets and tags as docker-compose.yml
# gives Compose, from the same files the test hands Compose (the repository's
# tracked and untracked, not ignored files): much of that build is the vfs
# driver copying files, which overlaps the plugin's compile, and the test's
# `docker compose up -d --build` then builds the same Dockerfile with every
# layer cached. ODEK_COMPOSE_PREBUILD=0 leaves the whole build to Compose.
prebuild() {
	local ctx rc=0 t0
	t0=$(date +%s)
	ctx="$(mktemp -d)"
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
		tar --null -T - -cf - | tar -C "$ctx" -xf -
	for target in bot worker; do
		DOCKER_BUILDKIT=0 docker build -q --target "$target" -t "odek-$target:local" "$ctx" >/dev/null || { rc=$?; break; }
	done
	rm -rf "$ctx"
	[ "$rc" -eq 0 ] && say "odek-bot:local and odek-worker:local built in $(($(date +%s) - t0)) s (beside the plugin's build)"
	return "$rc"
}
t0_base=$(date +%s)
baselog="$(mktemp)"
{
	bash test/compose/base-images.sh
	say "base images ready in $(($(date +%s) - t0_base)) s"
	if [ "${ODEK_COMPOSE_PREBUILD:-1}" = 1 ]; then prebuild; fi
} >"$baselog" 2>&1 &
basepid=$!

# ---- Compose v2 ----
# Debian bookworm ships only Compose v1 (docker-compose 1.29, Python); the
# README's commands are v2's (`docker compose`), so the v2 plugin is built
# from its Go module. `go install pkg@version` refuses it (its go.mod has
# exclude directives), so it is built from the downloaded module as the
# main module.
plugins=/usr/local/lib/docker/cli-plugins
if ! docker compose version 2>/dev/null | grep -q -- "$COMPOSE_VERSION"; then
	say "building the Compose $COMPOSE_VERSION CLI plugin from its Go module"
	t0=$(date +%s)
	build="$(mktemp -d)"
	# Outside the repository, so its go.mod and go.sum stay untouched.
	src="$(cd "$build" && go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
	[ -d "$src" ] || { say "go mod download gave no directory"; exit 1; }
	cp -r "$src" "$build/compose"
	chmod -R u+w "$build/compose"
	(cd "$build/compose" && CGO_ENABLED=0 go build -trimpath \
		-ldflags="-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
		-o "$build/docker-compose" ./cmd)
	$SUDO mkdir -p "$plugins"
	$SUDO install -m 0755 "$build/docker-compose" "$plugins/docker-compose"
	rm -rf "$build"
	say "compose plugin built in $(($(date +%s) - t0)) s"
fi
docker compose version

# ---- base and odek's images: wait for them ----
if ! wait "$basepid"; then
	cat "$baselog" >&2
	rm -f "$baselog"
	say "building the images failed"
	exit 1
fi
cat "$baselog" >&2
rm -f "$baselog"
say "images ready $(($(date +%s) - t0_base)) s after the start (beside the plugin's build)"
# The tracing stage (ODEK_COMPOSE_TRACING=1) brings up the compose file's
# trace viewer, whose image is built here from Jaeger's Go module
# (test/otel/build-jaeger.sh; the binary is cached between runs).
if [ "${ODEK_COMPOSE_TRACING:-}" = 1 ]; then
	t0=$(date +%s)
	bash test/compose/trace-viewer-image.sh
	say "trace viewer image ready in $(($(date +%s) - t0)) s"
fi

# ---- the test ----
# Docker 20.10's CLI has no buildx plugin here, so Compose builds with the
# classic builder (the Dockerfile needs nothing BuildKit-only).
export DOCKER_BUILDKIT=0
# The classic builder does not share the Dockerfile's build stage between
# the bot and worker targets built at once: one at a time, the second reuses
# the first's cached layers instead of compiling everything again.
export COMPOSE_PARALLEL_LIMIT=1
# The test's figures (stage durations, the Sentinel failover's timeline)
# are repeated as compose-test: lines, which .ci/run shows.
testlog="$(mktemp)"
rc=0
ODEK_COMPOSE=1 go test -count=1 -v -timeout 25m ${ODEK_COMPOSE_RUN:+-run "$ODEK_COMPOSE_RUN"} ./test/compose/ 2>&1 | tee "$testlog" || rc=$?
grep -E '^ +[a-z_]+_test\.go:[0-9]+: ' "$testlog" | grep -E ': [^:]+: [0-9.]+ ?(s|ms|m[0-9.]+s)$|sentinel failover:|tracing: |compose test: ' |
	sed -E 's/^ +[a-z_]+_test\.go:[0-9]+: /compose-test: /' >&2 || true
rm -f "$testlog"
say "done in $(($(date +%s) - began)) s"
exit "$rc"
