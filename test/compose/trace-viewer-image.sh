#!/usr/bin/env bash
# Builds, offline from any image registry, the image docker-compose.yml's
# `trace-viewer` service (the `tracing` profile) names, and tags it with
# that name, as base-images.sh does for the base images: Jaeger's
# all-in-one program built from its Go module by test/otel/build-jaeger.sh
# (pinned there), laid out as the upstream image lays it out
# (/cmd/jaeger/jaeger-linux as the entrypoint, JAEGER_LISTEN_HOST=0.0.0.0,
# user 10001), on the local distroless base.
#
# One difference from the upstream image: the Go module carries no UI
# assets (they come from the separate jaeger-ui build, which no registry
# this machine reaches serves), so this image answers the query API
# (/api/...) and shows a placeholder page where the upstream image shows
# the UI. The compose test's tracing stage uses the API only.
#
# An image that already exists is kept (delete it to rebuild). Needs a
# running Docker engine and the base images (base-images.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

image="$(sed -n 's/^ *image: *\(jaegertracing\/jaeger:[^ ]*\) *$/\1/p' docker-compose.yml)"
[ -n "$image" ] || { echo "trace-viewer-image: no jaegertracing/jaeger image in docker-compose.yml" >&2; exit 1; }
if docker image inspect "$image" >/dev/null 2>&1; then
	echo "trace-viewer-image: $image present" >&2
	exit 0
fi
bin="$(bash test/otel/build-jaeger.sh)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$bin" "$work/jaeger-linux"
cat >"$work/Dockerfile" <<'DOCKERFILE'
FROM gcr.io/distroless/static-debian12:nonroot
ENV JAEGER_LISTEN_HOST=0.0.0.0
EXPOSE 4317 4318 16686 13133
COPY jaeger-linux /cmd/jaeger/jaeger-linux
ENTRYPOINT ["/cmd/jaeger/jaeger-linux"]
USER 10001
DOCKERFILE
DOCKER_BUILDKIT=0 docker build -q -t "$image" "$work" >/dev/null
echo "trace-viewer-image: built $image from $bin" >&2
