#!/usr/bin/env bash
# Builds the container images and runs them for real, with podman (no Docker engine needed):
#
#   1. tools: podman, runc, netavark/aardvark-dns, mmdebstrap (apt-get when missing),
#      podman-compose (pip, into .venv);
#   2. a Python 3.11 base image made from Debian bookworm's packages (mmdebstrap, the mirror of
#      this machine's apt sources; no container registry needed), kept and reused by tag;
#   3. docker/Dockerfile, docker/Dockerfile.pipeline and local PostgreSQL 15 and Prometheus
#      images (tests/container/postgres, tests/container/prometheus) built on that base;
#   4. the proxy on its embedded SQLite with a named volume: /healthz, `podman healthcheck run`,
#      a database and table created and read back over Thrift from this machine, /metrics,
#      SIGTERM within the grace period with status 0, the table still there in a new container;
#   5. the proxy on the PostgreSQL container;
#   6. docker-compose.yml with podman-compose (tests/container/compose.local.yml substitutes
#      local PostgreSQL and Prometheus images): two proxies on one database, a table created
#      through one and read through the other, Prometheus scraping both, then `down -v`;
#   7. the pipeline image's `--help` (with HMS_CONTAINER_PIPELINE=1, before `down`, also the
#      compose file's pipeline: Spark's ETL through proxy-a, verification through proxy-b).
#
# Exits non-zero naming the step that failed. Containers, volumes and networks it made are
# removed on exit; images stay (the next run reuses them and their layers).
#
# Environment: HMS_CONTAINER_KEEP=1 leaves the containers for a look after a failure;
# HMS_CONTAINER_BASE_REBUILD=1 remakes the base image; HMS_CONTAINER_APT_SOURCES (a sources
# file or a mirror line) replaces the Debian sources found in /etc/apt; HMS_CONTAINER_PYTHON
# is the Python with the package and its test tools (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
current_step="start"
step() {
  current_step="$1"
  echo "== [$((SECONDS - started))s] $1"
}
fail() {
  echo "container-test: FAILED in step '$current_step': $*" >&2
  exit 1
}

run_id="hmsct$$"
work=$(mktemp -d "${TMPDIR:-/tmp}/hms-container-test.XXXXXX")
containers=()
volumes=()
networks=()
compose_up=""

# The proxies' state directory is an anonymous volume (the image's VOLUME), which
# podman-compose's `down -v` leaves: they are removed with this run's own.
collect_compose_volumes() {
  local id v
  for id in $(podman ps -a -q --filter "label=io.podman.compose.project=$run_id"); do
    for v in $(podman inspect -f '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}' "$id"); do
      volumes+=("$v")
    done
  done
}

cleanup() {
  local status=$?
  set +e
  if [ "$status" -ne 0 ]; then
    echo "container-test: FAILED in step '$current_step' (exit $status)" >&2
    for c in "${containers[@]}"; do
      echo "--- last log lines of $c" >&2
      podman logs --tail 30 "$c" 2>&1 | grep -v 'systemd' >&2
    done
  fi
  if [ "${HMS_CONTAINER_KEEP:-0}" = 1 ] && [ "$status" -ne 0 ]; then
    echo "container-test: left for inspection (CONTAINERS_CONF=${CONTAINERS_CONF:-}):" \
      "${containers[*]} ${volumes[*]} ${networks[*]}" >&2
    return
  fi
  if [ -n "$compose_up" ]; then
    collect_compose_volumes
    compose down -v -t 30 >/dev/null 2>&1
  fi
  for c in "${containers[@]}"; do podman rm -f -v -t 5 "$c" >/dev/null 2>&1; done
  for v in "${volumes[@]}"; do podman volume rm -f "$v" >/dev/null 2>&1; done
  for n in "${networks[@]}"; do podman network rm -f "$n" >/dev/null 2>&1; done
  rm -rf "$work"
}
trap cleanup EXIT

# -- 1. tools ------------------------------------------------------------------------------------
step "tools"
missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /usr/lib/podman/netavark ] || missing+=(netavark)
[ -x /usr/lib/podman/aardvark-dns ] || missing+=(aardvark-dns)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
command -v newuidmap >/dev/null 2>&1 || missing+=(uidmap)
command -v slirp4netns >/dev/null 2>&1 || missing+=(slirp4netns)
command -v thrift >/dev/null 2>&1 || missing+=(thrift-compiler) # the probe's Apache client
command -v curl >/dev/null 2>&1 || missing+=(curl)
if ((${#missing[@]})); then
  echo "installing ${missing[*]} with apt-get"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}" || fail "apt-get install ${missing[*]}"
fi
# The Python that runs the Thrift probe and podman-compose: the suite's (tests/container) or
# .venv's, made as scripts/test.sh makes it when missing.
python=${HMS_CONTAINER_PYTHON:-.venv/bin/python}
if [ ! -x "$python" ]; then
  "${PYTHON:-python3}" -m venv .venv
  "$python" -m pip install -q -e ".[test,container]" || fail "pip install the package into .venv"
fi
podman_compose="$(dirname "$python")/podman-compose"
if [ ! -x "$podman_compose" ]; then
  "$python" -m pip install -q "podman-compose>=1.1" || fail "pip install podman-compose"
fi

# This run's podman settings, not the machine's: runc (crun cannot set rlimits on some hosts),
# ulimits a container may have here, cgroupfs and file events (no systemd), netavark (its DNS
# lets compose services find each other by name).
export CONTAINERS_CONF="$work/containers.conf"
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "netavark"
EOF
podman info >"$work/podman-info.txt" 2>&1 || fail "podman info: $(tail -5 "$work/podman-info.txt")"

compose() {
  "$podman_compose" -p "$run_id" -f docker-compose.yml \
    -f tests/container/compose.local.yml "$@"
}

# -- 2. the base image -----------------------------------------------------------------------------
step "base image"
base_packages="python3,python3-pip,python3-venv,python-is-python3,ca-certificates"
# This machine's extra CA certificates (a TLS-inspecting proxy in front of PyPI, say) go into
# the base so that pip inside a build trusts what pip on the host trusts.
extra_cas=(/usr/local/share/ca-certificates/*.crt)
[ -e "${extra_cas[0]}" ] || extra_cas=()
# This machine's Debian sources (other vendors' repositories need keys the base does not
# have); HMS_CONTAINER_APT_SOURCES names another sources file, or a mirror line, instead.
sources=()
if [ -n "${HMS_CONTAINER_APT_SOURCES:-}" ]; then
  sources=("$HMS_CONTAINER_APT_SOURCES")
else
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -s "$f" ] && grep -q -E 'debian-archive-keyring|[./]debian\.org/' "$f" && sources+=("$f")
  done
fi
((${#sources[@]})) || fail "no Debian source in /etc/apt/sources.list*: set HMS_CONTAINER_APT_SOURCES"
recipe=$({
  echo "bookworm minbase $base_packages"
  for f in "${sources[@]}" "${extra_cas[@]}"; do
    if [ -f "$f" ]; then cat "$f"; else echo "$f"; fi
  done
} | sha256sum | cut -c1-12)
base_image="localhost/hms-cache-proxy-base:py3.11-bookworm-$recipe"
if [ "${HMS_CONTAINER_BASE_REBUILD:-0}" = 1 ] || ! podman image exists "$base_image"; then
  hooks=()
  if ((${#extra_cas[@]})); then
    hooks+=(--customize-hook="copy-in ${extra_cas[*]} /usr/local/share/ca-certificates/")
  fi
  # Like the python:3.11-slim images: `python` and `pip` on PATH, pip may install system-wide.
  hooks+=(--customize-hook='chroot "$1" update-ca-certificates')
  hooks+=(--customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED')
  hooks+=(--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*')
  mmdebstrap --variant=minbase --include="$base_packages" "${hooks[@]}" \
    bookworm "$work/base.tar" "${sources[@]}" >"$work/mmdebstrap.log" 2>&1 ||
    fail "mmdebstrap: $(tail -20 "$work/mmdebstrap.log")"
  podman import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
    "$work/base.tar" "$base_image" >/dev/null || fail "podman import of the base"
  rm -f "$work/base.tar"
  echo "made $base_image"
  for old in $(podman image ls --format '{{.Repository}}:{{.Tag}}' localhost/hms-cache-proxy-base); do
    [ "$old" = "$base_image" ] || podman rmi "$old" >/dev/null 2>&1 || true
  done
else
  echo "reusing $base_image"
fi

# -- 3. images -----------------------------------------------------------------------------------
build() { # build IMAGE LOG podman-build-args...: the image replaced (if any) is removed
  local image=$1 log=$2
  shift 2
  local t0=$SECONDS old new
  old=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  # --format docker: the OCI format has no HEALTHCHECK.
  podman build --format docker -t "$image" "$@" >"$work/$log" 2>&1 ||
    fail "podman build of $image: $(tail -30 "$work/$log")"
  new=$(podman image inspect --format '{{.Id}}' "$image")
  # Only the replaced image; its build stage's layers stay for the next build to reuse.
  [ -z "$old" ] || [ "$old" = "$new" ] || podman rmi "$old" >/dev/null 2>&1 || true
  echo "built $image in $((SECONDS - t0))s"
}
step "build docker/Dockerfile"
build localhost/hms-cache-proxy:latest build-proxy.log --build-arg PYTHON_IMAGE="$base_image" \
  -f docker/Dockerfile .
step "build the local PostgreSQL image"
build localhost/hms-cache-proxy-test-postgres:15 build-postgres.log \
  --build-arg BASE_IMAGE="$base_image" tests/container/postgres
step "build the local Prometheus image"
build localhost/hms-cache-proxy-test-prometheus:latest build-prometheus.log \
  --build-arg BASE_IMAGE="$base_image" tests/container/prometheus
step "build docker/Dockerfile.pipeline"
build localhost/hms-cache-proxy-pipeline:latest build-pipeline.log \
  --build-arg PYTHON_IMAGE="$base_image" -f docker/Dockerfile.pipeline .
# -- helpers -------------------------------------------------------------------------------------
host_port() { # host_port CONTAINER CONTAINER_PORT -> the published host port
  podman port "$1" "$2/tcp" | head -1 | sed 's/.*://'
}
wait_healthy() { # wait_healthy CONTAINER: the image's HEALTHCHECK passes (60 s at most)
  local deadline=$((SECONDS + 60))
  until podman healthcheck run "$1" >/dev/null 2>&1; do
    [ "$(podman inspect -f '{{.State.Running}}' "$1")" = true ] || fail "$1 exited"
    ((SECONDS < deadline)) || fail "podman healthcheck run $1 did not pass within 60s"
    sleep 1
  done
}
probe() { # probe create|expect HOST:PORT DB TABLE
  "$python" -m tests.container.probe "$@" || fail "Thrift: probe $*"
}
stop_gracefully() { # stop_gracefully CONTAINER: SIGTERM, exit 0 within the grace period
  local t0=$SECONDS
  podman stop -t 30 "$1" >/dev/null 2>&1 || fail "podman stop $1"
  local took=$((SECONDS - t0)) code
  code=$(podman inspect -f '{{.State.ExitCode}}' "$1")
  [ "$code" = 0 ] || fail "$1 exited $code after SIGTERM (not 0)"
  ((took < 30)) || fail "$1 took ${took}s to stop (grace period 30s)"
  podman logs "$1" 2>&1 | grep -q '"message": "stopped' ||
    fail "$1 did not log its orderly stop"
  echo "$1 stopped on SIGTERM in ${took}s with status 0"
}
new_volume() {
  volumes+=("$1")
  podman volume create "$1" >/dev/null
}
run_proxy() { # run_proxy NAME [podman-run-options...]
  local name=$1
  shift
  containers+=("$name")
  podman run -d --name "$name" -p 127.0.0.1::9083 -p 127.0.0.1::9090 "$@" \
    localhost/hms-cache-proxy:latest >/dev/null 2>"$work/$name.run.err" ||
    fail "podman run $name: $(cat "$work/$name.run.err")"
}

# -- 4. SQLite, a named volume, SIGTERM, restart -------------------------------------------------
step "proxy on SQLite: health, Thrift, metrics"
new_volume "$run_id-state"
new_volume "$run_id-warehouse"
sqlite_mounts=(-v "$run_id-state:/var/lib/hms-cache-proxy" -v "$run_id-warehouse:/warehouse")
run_proxy "$run_id-sqlite" "${sqlite_mounts[@]}"
wait_healthy "$run_id-sqlite"
http=$(host_port "$run_id-sqlite" 9090)
thrift=$(host_port "$run_id-sqlite" 9083)
curl -fsS -m 10 "http://127.0.0.1:$http/healthz" | grep -q '"status": "ok"' ||
  fail "/healthz did not answer ok"
probe create "127.0.0.1:$thrift" sales orders
probe expect "127.0.0.1:$thrift" sales orders
metrics=$(curl -fsS -m 10 "http://127.0.0.1:$http/metrics") || fail "/metrics did not answer"
for name in hms_cache_tables hms_cache_hits_total hms_cache_misses_total hms_cache_lag_seconds; do
  grep -q "^# TYPE $name" <<<"$metrics" || fail "/metrics has no $name"
done
step "proxy on SQLite: SIGTERM"
stop_gracefully "$run_id-sqlite"
step "proxy on SQLite: a new container on the same volume"
run_proxy "$run_id-sqlite2" "${sqlite_mounts[@]}"
wait_healthy "$run_id-sqlite2"
probe expect "127.0.0.1:$(host_port "$run_id-sqlite2" 9083)" sales orders
stop_gracefully "$run_id-sqlite2"

# -- 5. PostgreSQL -------------------------------------------------------------------------------
step "proxy on the PostgreSQL container"
networks+=("$run_id-net")
podman network create "$run_id-net" >/dev/null
containers+=("$run_id-pg")
podman run -d --name "$run_id-pg" --network "$run_id-net" -e POSTGRES_USER=hive \
  -e POSTGRES_PASSWORD=hive -e POSTGRES_DB=metastore \
  localhost/hms-cache-proxy-test-postgres:15 >/dev/null 2>"$work/pg.run.err" ||
  fail "podman run postgres: $(cat "$work/pg.run.err")"
deadline=$((SECONDS + 60))
until podman exec "$run_id-pg" pg_isready -q -U hive -d metastore 2>/dev/null; do
  ((SECONDS < deadline)) || fail "PostgreSQL container not ready within 60s"
  sleep 1
done
run_proxy "$run_id-pgproxy" --network "$run_id-net" \
  -e HMS_CACHE_PROXY_DATABASE_URL="postgresql://hive:hive@$run_id-pg:5432/metastore"
wait_healthy "$run_id-pgproxy"
probe create "127.0.0.1:$(host_port "$run_id-pgproxy" 9083)" sales orders
stop_gracefully "$run_id-pgproxy"
podman stop -t 30 "$run_id-pg" >/dev/null 2>&1

# -- 6. docker-compose.yml -----------------------------------------------------------------------
step "compose: postgres, proxy-a, proxy-b, prometheus"
for port in 9083 9084 9090 9091 19090; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "port $port is taken on this machine; docker-compose.yml publishes it"
  fi
done
compose_up=1
compose up -d postgres >"$work/compose-up.log" 2>&1 ||
  fail "podman-compose up postgres: $(tail -20 "$work/compose-up.log")"
pg=$(podman ps -q --filter "label=io.podman.compose.project=$run_id" \
  --filter "label=com.docker.compose.service=postgres")
[ -n "$pg" ] || fail "no postgres container after podman-compose up"
# podman-compose does not wait for `condition: service_healthy`: wait here, with compose's check.
deadline=$((SECONDS + 60))
until podman healthcheck run "$pg" >/dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "compose's postgres health check did not pass within 60s"
  sleep 1
done
compose up -d --no-build proxy-a proxy-b prometheus >>"$work/compose-up.log" 2>&1 ||
  fail "podman-compose up proxies and prometheus: $(tail -20 "$work/compose-up.log")"
for service in proxy-a proxy-b; do
  id=$(podman ps -q --filter "label=io.podman.compose.project=$run_id" \
    --filter "label=com.docker.compose.service=$service")
  [ -n "$id" ] || fail "no $service container after podman-compose up"
  wait_healthy "$id"
done
step "compose: a table created through proxy-a, read through proxy-b"
probe create 127.0.0.1:9083 shared events
probe expect 127.0.0.1:9084 shared events
# proxy-b's cache follows the notification log that proxy-a's writes filled.
deadline=$((SECONDS + 30))
until curl -fsS -m 10 http://127.0.0.1:9091/metrics | grep -q -E '^hms_cache_event_position [1-9]'; do
  ((SECONDS < deadline)) || fail "proxy-b's hms_cache_event_position stayed 0 for 30s"
  sleep 1
done
step "compose: Prometheus scrapes both proxies"
# docker/prometheus.yml scrapes every 15 s; both targets must be up within two rounds.
deadline=$((SECONDS + 45))
until [ "$(curl -fsS -m 10 http://127.0.0.1:19090/api/v1/targets 2>/dev/null |
  grep -o '"health":"up"' | wc -l)" = 2 ]; do
  ((SECONDS < deadline)) ||
    fail "Prometheus targets not both up in 45s: $(curl -sS -m 10 http://127.0.0.1:19090/api/v1/targets 2>&1 | head -c 2000)"
  sleep 2
done
if [ "${HMS_CONTAINER_PIPELINE:-0}" = 1 ]; then
  # The compose file's Spark jobs (3 minutes or more here: off by default). `run --no-deps`:
  # podman-compose cannot start pipeline-verify after its dependency has exited.
  step "compose: pipeline etl through proxy-a, verify through proxy-b"
  compose run --no-deps --rm pipeline >"$work/pipeline-etl.log" 2>&1 ||
    fail "pipeline etl: $(grep -v systemd "$work/pipeline-etl.log" | tail -30)"
  grep -v systemd "$work/pipeline-etl.log" | grep -E '^(etl|visibility)' || true
  compose run --no-deps --rm pipeline-verify >"$work/pipeline-verify.log" 2>&1 ||
    fail "pipeline verify: $(grep -v systemd "$work/pipeline-verify.log" | tail -30)"
  grep -q 'verify: .* 0 problems' "$work/pipeline-verify.log" ||
    fail "pipeline verify found problems: $(tail -30 "$work/pipeline-verify.log")"
  grep -E '^verify:' "$work/pipeline-verify.log"
fi
step "compose: down"
collect_compose_volumes
compose down -v -t 30 >"$work/compose-down.log" 2>&1 ||
  fail "podman-compose down: $(tail -20 "$work/compose-down.log")"
compose_up=""
left=$(podman ps -a -q --filter "label=io.podman.compose.project=$run_id")
[ -z "$left" ] || fail "containers left after podman-compose down: $left"

# -- 7. the pipeline image ------------------------------------------------------------------------
step "pipeline image: --help"
containers+=("$run_id-pipeline" "$run_id-java")
podman run --name "$run_id-pipeline" localhost/hms-cache-proxy-pipeline:latest pipeline --help \
  >"$work/pipeline-help.txt" 2>&1 || fail "pipeline --help: $(tail -20 "$work/pipeline-help.txt")"
grep -q 'verify' "$work/pipeline-help.txt" || fail "pipeline --help does not list verify"
podman run --name "$run_id-java" --entrypoint java localhost/hms-cache-proxy-pipeline:latest -version \
  >"$work/java.txt" 2>&1 || fail "java -version in the pipeline image: $(cat "$work/java.txt")"
grep -q 'version "17' "$work/java.txt" || fail "the pipeline image has no Java 17: $(cat "$work/java.txt")"

step "done"
podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'hms-cache-proxy' | sort
echo "container-test: all steps passed in $((SECONDS - started))s"
