#!/bin/sh
# The official redis image's start: arguments starting with "-" go to redis-server, and a
# process started as root runs as the redis user.
set -eu
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$(id -u)" = 0 ]; then
    exec setpriv --reuid=redis --regid=redis --init-groups "$@"
fi
exec "$@"
