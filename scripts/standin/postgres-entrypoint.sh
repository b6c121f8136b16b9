#!/bin/sh
# The official postgres image's start, reduced to what docker-compose.yml uses: an empty data
# directory is initialized with POSTGRES_USER (default postgres) and POSTGRES_PASSWORD (required),
# the database POSTGRES_DB (default: the user) is created, and connections from the network
# need the password.
set -eu
if [ "${1#-}" != "$1" ]; then set -- postgres "$@"; fi
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
    user=${POSTGRES_USER:-postgres}
    db=${POSTGRES_DB:-$user}
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.auto.conf"
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ "$db" != postgres ]; then
        psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres \
            -c "CREATE DATABASE \"$db\"" >/dev/null
    fi
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    echo "standin postgres: initialized $PGDATA for user $user, database $db"
fi
exec "$@"
