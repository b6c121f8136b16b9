#!/usr/bin/env bash
# Stand-ins for the official base images that docker-compose.yml and Dockerfile name, for
# machines that reach no image registry (CI here): a Debian bookworm root file system made by
# debootstrap from Debian's packages, and from it python3.11, postgresql-15 and redis-server
# images tagged with the official names (scripts/standin/, docs/compose.md). An image that is
# already present (pulled from a registry or built before) is kept; nothing is pushed.
# Stand-ins are labelled org.provenance.standin.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON_IMAGE=${PYTHON_IMAGE:-python:3.11.11-slim-bookworm}
POSTGRES_IMAGE=${POSTGRES_IMAGE:-postgres:15.20-bookworm}
REDIS_IMAGE=${REDIS_IMAGE:-redis:7.0.15-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
BASE=provenance-standin/debian:bookworm

have() { docker image inspect "$1" >/dev/null 2>&1; }

missing=()
for image in "$PYTHON_IMAGE" "$POSTGRES_IMAGE" "$REDIS_IMAGE"; do
    have "$image" || missing+=("$image")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "standin: base images present"
    exit 0
fi

if ! have "$BASE"; then
    command -v debootstrap >/dev/null || { echo "standin: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
    root=$(mktemp -d /tmp/standin-rootfs.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    start=$SECONDS
    debootstrap --variant=minbase bookworm "$root" "$DEBIAN_MIRROR" >"$root.log" 2>&1 \
        || { tail -20 "$root.log" >&2; echo "standin: debootstrap failed" >&2; exit 1; }
    rm -f "$root.log"
    cat >"$root/etc/apt/sources.list" <<SOURCES
deb $DEBIAN_MIRROR bookworm main
deb $DEBIAN_MIRROR bookworm-updates main
deb $DEBIAN_SECURITY_MIRROR bookworm-security main
SOURCES
    # Containers start no services while packages install; apt keeps no package files.
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod +x "$root/usr/sbin/policy-rc.d"
    echo 'APT::Install-Recommends "false";' >"$root/etc/apt/apt.conf.d/90standin"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' - "$BASE" >/dev/null
    rm -rf "$root"
    trap - EXIT
    echo "standin: $BASE from debootstrap in $((SECONDS - start)) s"
fi

build() {  # image, Dockerfile
    local start=$SECONDS
    docker build -q --network host -f "scripts/standin/$2" -t "$1" scripts/standin >/dev/null
    echo "standin: $1 built from Debian packages in $((SECONDS - start)) s"
}
have "$PYTHON_IMAGE" || build "$PYTHON_IMAGE" Dockerfile.python
have "$POSTGRES_IMAGE" || build "$POSTGRES_IMAGE" Dockerfile.postgres
have "$REDIS_IMAGE" || build "$REDIS_IMAGE" Dockerfile.redis
