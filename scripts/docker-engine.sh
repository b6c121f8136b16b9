#!/usr/bin/env bash
# A Docker engine for `make compose-test`: kept when one answers, else Debian's docker.io and
# docker-compose are installed (root) and dockerd is started in the background with the
# overlay2 storage driver and without iptables rules (the machines here allow no NAT; the
# images are built with the host's network, the deployment's containers talk on compose's
# bridge network and publish nothing beyond the web's port). Its log: var/compose/dockerd.log.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || need+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "engine: missing Debian packages: ${need[*]} (run as root)" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
if docker info >/dev/null 2>&1; then
    echo "engine: running"
    exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "engine: no Docker engine answers and starting one needs root" >&2; exit 1; }
mkdir -p var/compose
nohup dockerd --storage-driver=overlay2 --iptables=false >var/compose/dockerd.log 2>&1 &
for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && { echo "engine: started dockerd (pid $!)"; exit 0; }
    sleep 1
done
echo "engine: dockerd did not answer within 60 s; its log:" >&2
tail -20 var/compose/dockerd.log >&2
exit 1
