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
began=$(date +%s)
say() { echo "base-images: $* ($(($(date +%s) - began)) s)" >&2; }

# Each image is one layer, imported from a tar stream or committed from one
# container, its settings given to `docker import -c`/`docker commit -c`.
# A Dockerfile costs far more on the vfs storage driver: each instruction,
# metadata-only ones (ENV, WORKDIR, USER, CMD) too, is a container created
# and committed by the classic builder, two full copies of the root
# filesystem (Redis' seven instructions took 3 min 20 s at load 9, the Go
# image's three 2 min 10 s; as below, seconds).

# One Debian root, for debian:bookworm-slim and, with the Go toolchain
# added, golang:1.26-bookworm.
rootfs="$work/rootfs"
debian_root() {
	[ -d "$rootfs" ] && return 0
	say "debootstrap bookworm (minbase)"
	debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log" >&2; exit 1; }
	# Slim as the registry's debian:bookworm-slim: no documentation, manual
	# pages or translations, now or from packages installed later (dpkg's
	# path-exclude), and no apt caches. On vfs every container and layer is
	# a full copy of this tree, so its size is paid on each.
	cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
DPKG
	cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
	find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
	find "$rootfs/usr/share/doc" -mindepth 1 -depth -type d -empty -delete
	find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
	rm -rf "$rootfs/usr/share/man"/* "$rootfs/usr/share/info"/* "$rootfs/usr/share/lintian" \
		"$rootfs/var/cache/apt"/*.bin "$rootfs/var/cache/apt/archives"/*.deb "$rootfs/var/lib/apt/lists"/*
	mkdir -p "$rootfs/etc/ssl/certs"
	# The machine's CA bundle, so images that fetch over HTTPS trust what
	# this machine trusts.
	cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
	say "Debian root ready, $(du -sh "$rootfs" | cut -f1)"
}

if ! have debian:bookworm-slim; then
	debian_root
	tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
	say "debian:bookworm-slim imported"
fi

if ! have golang:1.26-bookworm; then
	debian_root
	goroot="$(go env GOROOT)"
	say "golang:1.26-bookworm from $goroot"
	# Added to the root for the import, then taken out again. Without the
	# toolchain's own tests and test data (/usr/local/go/test, testdata
	# directories, _test.go files: 9,000 of its 15,000 files), which no
	# build reads: every layer of the Dockerfile's build stage is a copy of
	# this tree on vfs, file by file.
	mkdir -p "$rootfs/usr/local/go"
	tar -C "$goroot" -c --exclude=./test --exclude=testdata --exclude='*_test.go' . | tar -C "$rootfs/usr/local/go" -x
	mkdir -p "$rootfs/go/bin" "$rootfs/go/src"
	tar -C "$rootfs" -c . | docker import \
		-c 'ENV PATH=/usr/local/go/bin:/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c 'ENV GOPATH=/go' -c 'ENV GOTOOLCHAIN=local' -c 'WORKDIR /go' -c 'CMD ["bash"]' \
		- golang:1.26-bookworm >/dev/null
	rm -rf "$rootfs/usr/local/go" "$rootfs/go"
	say "golang:1.26-bookworm imported"
fi

if ! have gcr.io/distroless/static-debian12:nonroot; then
	d="$work/distroless"
	mkdir -p "$d/etc/ssl/certs" "$d/tmp" "$d/home/nonroot"
	chmod 1777 "$d/tmp"
	cp /etc/ssl/certs/ca-certificates.crt "$d/etc/ssl/certs/"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$d/etc/group"
	chown 65532:65532 "$d/home/nonroot"
	tar -C "$d" -c . | docker import -c 'USER 65532:65532' -c 'WORKDIR /home/nonroot' - gcr.io/distroless/static-debian12:nonroot >/dev/null
	say "distroless static (nonroot) imported"
fi

if ! have redis:7-alpine; then
	say "redis (Debian's redis-server)"
	# Like the official image's entrypoint: a redis-server started with
	# arguments only (the compose file's command) and no config file would
	# keep protected mode on and refuse every client from another
	# container; the container's network is the boundary, so it is turned
	# off first (a later --protected-mode argument still wins).
	cat >"$work/entrypoint.sh" <<'SH'
#!/bin/sh
if [ "$1" = redis-server ]; then
	shift
	set -- redis-server --protected-mode no "$@"
fi
exec "$@"
SH
	ctr="odek-base-redis-$$"
	docker rm -f "$ctr" >/dev/null 2>&1 || true
	docker create --name "$ctr" debian:bookworm-slim sh -c \
		'apt-get update && apt-get install -y --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data' >/dev/null
	docker cp "$work/entrypoint.sh" "$ctr:/usr/local/bin/docker-entrypoint.sh"
	if ! docker start -a "$ctr" >"$work/redis.log" 2>&1; then
		tail -20 "$work/redis.log" >&2
		docker rm -f "$ctr" >/dev/null
		exit 1
	fi
	docker commit -c 'WORKDIR /data' -c 'USER redis' -c 'EXPOSE 6379' \
		-c 'ENTRYPOINT ["/bin/sh", "/usr/local/bin/docker-entrypoint.sh"]' -c 'CMD ["redis-server"]' \
		"$ctr" redis:7-alpine >/dev/null
	docker rm "$ctr" >/dev/null
	say "redis:7-alpine committed"
fi
say "ready"
