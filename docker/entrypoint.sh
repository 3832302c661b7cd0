#!/bin/sh
# Container entrypoint of hms-cache-proxy (docker/Dockerfile), also runnable on a plain machine.
#
# - Settings file: $HMS_CACHE_PROXY_CONFIG when set, else hms-cache-proxy.yaml in
#   $HMS_ENTRYPOINT_CONFIG_DIR (default /etc/hms-cache-proxy) when present. HMS_CACHE_PROXY_*
#   variables override the file; flags override both.
# - HMS_ENTRYPOINT_INIT_DB=true runs `hms-cache-proxy init-db` before serving (for
#   database_auto_create: false; init-db does nothing on a database that has the schema).
# - Arguments: a command (serve, init-db, status, pipeline, ...) and its flags; none means
#   `serve`; flags alone are serve's. The command replaces this shell (exec), so signals
#   reach it directly.
set -eu

config_dir="${HMS_ENTRYPOINT_CONFIG_DIR:-/etc/hms-cache-proxy}"
if [ -z "${HMS_CACHE_PROXY_CONFIG:-}" ] && [ -f "$config_dir/hms-cache-proxy.yaml" ]; then
    HMS_CACHE_PROXY_CONFIG="$config_dir/hms-cache-proxy.yaml"
    export HMS_CACHE_PROXY_CONFIG
fi

if [ "$#" -eq 0 ]; then
    set -- serve
fi
case "$1" in
    -*) set -- serve "$@" ;;
esac

if [ "$1" = serve ] && [ "${HMS_ENTRYPOINT_INIT_DB:-false}" = true ]; then
    hms-cache-proxy init-db
fi

exec hms-cache-proxy "$@"
