#!/usr/bin/env bash
# Builds, offline from any image registry, the base images the Dockerfile
# and docker-compose.yml name, and tags them with those names:
#
#   debian:bookworm-slim                  debootstrap --variant=minbase bookworm
#   golang:1.26-bookworm                  that, plus this machine's Go toolchain
#   gcr.io/distroless/static-debian12:nonroot
#                                         CA bundle, passwd/group with nonroot (65532), tzdata-free
#   redis:7-alpine                        Debian's redis-server with protected mode off
#
# An image that already exists is kept (delete it to rebuild). Needs root,
# a running Docker engine, debootstrap and the Debian mirror.
set -euo pipefail

have() { docker image inspect "$1" >/dev/null 2>&1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if ! have debian:bookworm-slim; then
	echo "base-images: debootstrap bookworm (minbase)" >&2
	debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log" >&2; exit 1; }
	mkdir -p "$work/rootfs/etc/ssl/certs"
	# The machine's CA bundle, so images that fetch over HTTPS trust what
	# this machine trusts.
	cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
	rm -rf "$work/rootfs/var/cache/apt/archives"/*.deb "$work/rootfs/var/lib/apt/lists"/*
	tar -C "$work/rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - debian:bookworm-slim >/dev/null
	rm -rf "$work/rootfs"
fi

if ! have golang:1.26-bookworm; then
	echo "base-images: golang:1.26-bookworm from $(go env GOROOT)" >&2
	goroot="$(go env GOROOT)"
	mkdir -p "$work/go"
	cp -a "$goroot" "$work/go/go"
	cat >"$work/go/Dockerfile" <<'DOCKERFILE'
FROM debian:bookworm-slim
COPY go /usr/local/go
ENV PATH=/usr/local/go/bin:/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOPATH=/go GOTOOLCHAIN=local
WORKDIR /go
DOCKERFILE
	docker build -q -t golang:1.26-bookworm "$work/go" >/dev/null
	rm -rf "$work/go"
fi

if ! have gcr.io/distroless/static-debian12:nonroot; then
	echo "base-images: distroless static (nonroot)" >&2
	d="$work/distroless"
	mkdir -p "$d/etc/ssl/certs" "$d/tmp" "$d/home/nonroot"
	chmod 1777 "$d/tmp"
	cp /etc/ssl/certs/ca-certificates.crt "$d/etc/ssl/certs/"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$d/etc/group"
	chown 65532:65532 "$d/home/nonroot"
	tar -C "$d" -c . | docker import -c 'USER 65532:65532' -c 'WORKDIR /home/nonroot' - gcr.io/distroless/static-debian12:nonroot >/dev/null
fi

if ! have redis:7-alpine; then
	echo "base-images: redis (Debian's redis-server)" >&2
	mkdir -p "$work/redis"
	# Like the official image's entrypoint: a redis-server started with
	# arguments only (the compose file's command) and no config file would
	# keep protected mode on and refuse every client from another
	# container; the container's network is the boundary, so it is turned
	# off first (a later --protected-mode argument still wins).
	cat >"$work/redis/entrypoint.sh" <<'SH'
#!/bin/sh
if [ "$1" = redis-server ]; then
	shift
	set -- redis-server --protected-mode no "$@"
fi
exec "$@"
SH
	cat >"$work/redis/Dockerfile" <<'DOCKERFILE'
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && mkdir -p /data && chown redis:redis /data
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
WORKDIR /data
USER redis
EXPOSE 6379
ENTRYPOINT ["/bin/sh", "/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
DOCKERFILE
	docker build -q -t redis:7-alpine "$work/redis" >/dev/null
fi
echo "base-images: ready" >&2
