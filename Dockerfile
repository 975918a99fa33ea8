# odek team instance: both binaries (odek, odek-bot), built static.
#
#   docker build --target bot    -t odek-bot .   # the Telegram front end
#   docker build --target worker -t odek-worker . # `odek worker`
#
# Both final images run as uid 65532 (non-root) and carry both binaries, so
# either can run `odek-bot healthcheck URL` against its own /healthz.
# docker-compose.yml builds and wires them; docs/DEPLOY.md explains it.

FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum deps.txt ./
# The dependencies the three binaries link (deps.txt: 145 packages of other
# modules, kept equal to `go list -deps` by internal/archtest's
# TestDockerDeps) are compiled in a layer of their own, cached until go.mod,
# go.sum or deps.txt change: a source edit then recompiles only odek's own
# packages. The list is what the binaries link, not every package of every
# direct dependency (which was 616 packages, four times the work on a fresh
# build).
RUN go mod download \
 && grep -v '^#' deps.txt | xargs go build -trimpath
COPY . .
RUN go build -trimpath -ldflags="-s -w" -o /out/odek ./cmd/odek \
 && go build -trimpath -ldflags="-s -w" -o /out/odek-bot ./cmd/odek-bot \
 && go build -trimpath -ldflags="-s -w" -o /out/odek-sandbox ./cmd/odek-sandbox \
 && mkdir -p /out/data/artifacts /out/data/home /out/data/state
# The worker's files as a tree to lay over its root in one COPY: the
# binaries and the CA bundle (a COPY of only a file that the base image may
# already hold identically makes an empty layer, and the classic builder
# then fails the next COPY with "failed to get layer …: layer does not
# exist", moby/moby#36573; seen with the compose test's base image).
RUN mkdir -p /out/worker/usr/local/bin /out/worker/etc/ssl/certs \
 && cp /out/odek /out/odek-bot /out/odek-sandbox /out/worker/usr/local/bin/ \
 && cp /etc/ssl/certs/ca-certificates.crt /out/worker/etc/ssl/certs/

# Only what the final images take, in a stage of its own: each COPY --from
# has the builder open the source stage's whole filesystem, and the build
# stage (toolchain, module and build caches) is large, so the bot and worker
# copy from this small one (it counts with the vfs storage driver, which
# copies a stage's files every time it is opened).
FROM scratch AS dist
COPY --from=build /out/ /

# The bot needs no userland: a static, shell-less image.
FROM gcr.io/distroless/static-debian12:nonroot AS bot
COPY --from=dist /odek /odek-bot /odek-sandbox /usr/local/bin/
COPY --from=dist --chown=65532:65532 /data /data
ENV ODEK_HOME=/data/home ODEK_ARTIFACTS_DIR=/data/artifacts
WORKDIR /data
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/odek-bot"]

# Workers run the agent's shell tool, so they get a minimal Debian userland
# (sh, coreutils); the binaries are the same static ones. The CA bundle
# comes from the build stage (the Go image has ca-certificates), so this
# stage needs no package download: smaller, and the same on every build.
FROM debian:bookworm-slim AS worker
RUN groupadd -g 65532 odek && useradd -u 65532 -g 65532 -d /data/home -s /bin/sh odek
COPY --from=dist /worker/ /
COPY --from=dist --chown=65532:65532 /data /data
ENV ODEK_HOME=/data/home ODEK_ARTIFACTS_DIR=/data/artifacts
WORKDIR /data
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/odek"]
CMD ["worker"]
