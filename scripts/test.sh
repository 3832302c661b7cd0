#!/usr/bin/env bash
# Installs everything the test suite needs, then runs the whole suite.
#   - Debian packages when missing: PostgreSQL server binaries (the suite starts its own
#     throwaway server), the Apache Thrift compiler (the tests' reference client), a Java
#     development kit (Spark, and the stock Hive Metastore the interop tests start, which
#     compiles a small class), PgBouncer (the transaction-pooler tests start their own);
#   - a virtualenv in .venv with the package, its test tools, PySpark, matplotlib (the
#     benchmark command's chart) and podman-compose.
# tests/container runs scripts/container-test.sh, which installs podman and builds the
# container images (1-3 minutes cached, about 8 from nothing); `-m "not container"` leaves it out.
# Arguments are passed to pytest, e.g. `bash scripts/test.sh -k partitions -x`; the suite runs on
# two worker processes (pytest-xdist), HMS_TEST_WORKERS=N sets how many (0: none).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
command -v thrift >/dev/null 2>&1 || missing+=(thrift-compiler)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)  # throwaway certificates (TLS tests)
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)  # transaction-pooler tests
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
# The stock metastore needs a PostgreSQL JDBC driver: the Maven cache's, else Debian's.
if ! ls ~/.m2/repository/org/postgresql/postgresql/*/postgresql-*.jar >/dev/null 2>&1 &&
   ! ls /usr/share/java/postgresql*.jar >/dev/null 2>&1; then
  missing+=(libpostgresql-jdbc-java)
fi
if ((${#missing[@]})); then
  echo "installing ${missing[*]} with apt-get"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test,spark,bench,container]"

# Two worker processes, each taking whole files (a file's module fixtures, e.g. a Spark session
# or a stock metastore, start once); HMS_TEST_WORKERS=0 runs everything in this process.
exec .venv/bin/python -m pytest -n "${HMS_TEST_WORKERS:-2}" --dist loadfile "$@"
