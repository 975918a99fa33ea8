# odek team instance: both binaries (odek, odek-bot), built static.
#
#   docker build --target bot    -t odek-bot .   # the Telegram front end
#   docker build --target worker -t odek-worker . # `odek worker`
#
# Both final images run as uid 65532 (non-root) and carry both binaries, so
# either can run `odek-bot healthcheck URL` against its own /healthz.
# docker-compose.yml builds and wires them; docs/DEPLOY.md explains it.
#
# Few instructions, and the metadata ones before the large files: with the
# classic builder every instruction, ENV, WORKDIR, USER and CMD too, is a
# container created and committed, and on the vfs storage driver (the
# compose test's) each of those copies the stage's whole root filesystem.
# Hence `cd /src` in the build stage rather than WORKDIR and ENV, and the
# final stages' binaries copied last (also: a source edit then rebuilds
# only that last layer of each).

FROM golang:1.26-bookworm AS build
COPY go.mod go.sum deps.txt /src/
# The dependencies the three binaries link (deps.txt: the packages of other
# modules that `go list -deps` gives, kept equal to it by internal/archtest's
# TestDockerDeps) are compiled in a layer of their own, cached until go.mod,
# go.sum or deps.txt change: a source edit then recompiles only odek's own
# packages. `go build` downloads only the modules those packages are in
# (not `go mod download`'s every module of the graph: 140 MB against
# 184 MB, in this layer and every copy of it).
RUN cd /src \
 && grep -v '^#' deps.txt | CGO_ENABLED=0 xargs go build -trimpath
COPY . /src/
# The three binaries in one `go build` (one load of the package graph,
# links in parallel), then the final images' files laid out in /out:
# /out/bin the binaries, /out/data the data directories, and /out/worker
# the worker's tree to lay over its root in one COPY (the binaries and the
# CA bundle: a COPY of only a file that the base image may already hold
# identically makes an empty layer, and the classic builder then fails the
# next COPY with "failed to get layer …: layer does not exist",
# moby/moby#36573; seen with the compose test's base image).
RUN cd /src \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/bin/ ./cmd/odek ./cmd/odek-bot ./cmd/odek-sandbox \
 && mkdir -p /out/data/artifacts /out/data/home /out/data/state /out/worker/usr/local/bin /out/worker/etc/ssl/certs \
 && cp /out/bin/odek /out/bin/odek-bot /out/bin/odek-sandbox /out/worker/usr/local/bin/ \
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
COPY --from=dist --chown=65532:65532 /data /data
ENV ODEK_HOME=/data/home ODEK_ARTIFACTS_DIR=/data/artifacts
WORKDIR /data
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/odek-bot"]
COPY --from=dist /bin/ /usr/local/bin/

# Workers run the agent's shell tool, so they get a minimal Debian userland
# (sh, coreutils); the binaries are the same static ones. The CA bundle
# comes from the build stage (the Go image has ca-certificates), so this
# stage needs no package download: smaller, and the same on every build.
FROM debian:bookworm-slim AS worker
RUN groupadd -g 65532 odek && useradd -u 65532 -g 65532 -d /data/home -s /bin/sh odek \
 && mkdir -p /data/artifacts /data/home /data/state && chown -R 65532:65532 /data
ENV ODEK_HOME=/data/home ODEK_ARTIFACTS_DIR=/data/artifacts
WORKDIR /data
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/odek"]
CMD ["worker"]
COPY --from=dist /worker/ /
