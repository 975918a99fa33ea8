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
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags="-s -w" -o /out/odek ./cmd/odek \
 && go build -trimpath -ldflags="-s -w" -o /out/odek-bot ./cmd/odek-bot \
 && mkdir -p /out/data/artifacts /out/data/home /out/data/state

# The bot needs no userland: a static, shell-less image.
FROM gcr.io/distroless/static-debian12:nonroot AS bot
COPY --from=build /out/odek /out/odek-bot /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/data /data
ENV ODEK_HOME=/data/home ODEK_ARTIFACTS_DIR=/data/artifacts
WORKDIR /data
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/odek-bot"]

# Workers run the agent's shell tool, so they get a minimal Debian userland
# (sh, coreutils, CA certificates); the binaries are the same static ones.
FROM debian:bookworm-slim AS worker
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd -g 65532 odek && useradd -u 65532 -g 65532 -d /data/home -s /bin/sh odek
COPY --from=build /out/odek /out/odek-bot /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/data /data
ENV ODEK_HOME=/data/home ODEK_ARTIFACTS_DIR=/data/artifacts
WORKDIR /data
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/odek"]
CMD ["worker"]
