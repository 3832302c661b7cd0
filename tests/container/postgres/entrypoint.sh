#!/bin/sh
# Initialises an empty $PGDATA the way the official postgres image does (superuser
# $POSTGRES_USER with $POSTGRES_PASSWORD, database $POSTGRES_DB, password logins from any
# address), then replaces itself with the server, listening on every interface.
set -eu

user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 "$PGDATA"
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        echo "CREATE DATABASE \"$database\";" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
