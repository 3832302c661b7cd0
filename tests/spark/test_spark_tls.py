"""Unmodified Spark (built-in Hive 2.3 client) talking to the service over TLS.

Two ``serve --tls-cert --tls-key`` instances share one PostgreSQL database; their Thrift ports
speak TLS only, with a certificate (SAN IP:127.0.0.1, DNS:localhost) signed by a throwaway CA
that the client trusts through a JKS truststore made by ``keytool``. In one Spark JVM (one
Python process): a SparkSession writes a partitioned table through instance A, a second
SparkSession (after the first has stopped) reads it back through instance B, and Hive's own
HiveMetaStoreClient fails against A, with an error and at once, without
``hive.metastore.use.SSL`` and with a truststore that lacks the CA.
docs/security.md ("Spark and Hive clients over TLS") shows the same settings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from thriftpy2.rpc import make_client

from hms_cache_proxy.idl import service as hms_service
from tests.support.security import make_pki
from tests.support.server import ROOT, ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.postgres]

TRUSTSTORE_PASSWORD = "changeit-test"

# Runs in its own Python process (one Spark JVM for everything): argv is a JSON object with
# the two URIs, the warehouse and the truststore. Prints one RESULT-JSON line.
DRIVER = """
import json, sys, time
from pyspark.sql import SparkSession

args = json.loads(sys.argv[1])
out = {}


def session(uri):
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("hms-tls")
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.hadoop.hive.metastore.use.SSL", "true")
        .config("spark.hadoop.hive.metastore.truststore.path", args["truststore"])
        .config("spark.hadoop.hive.metastore.truststore.password", args["password"])
        .config("spark.hadoop.hive.metastore.client.socket.timeout", "20s")
        .config("spark.sql.warehouse.dir", args["warehouse"])
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


t0 = time.monotonic()
spark = session(args["a"])
spark.sql("CREATE DATABASE s")
spark.sql("CREATE TABLE s.t (id INT, name STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET")
spark.sql("INSERT INTO s.t PARTITION (dt='2024-01-01') VALUES (1, 'a'), (2, 'b')")
spark.sql("INSERT INTO s.t PARTITION (dt='2024-01-02') VALUES (3, 'c')")
spark.stop()
out["write_seconds"] = round(time.monotonic() - t0, 1)

t0 = time.monotonic()
spark = session(args["b"])
out["databases"] = sorted(r[0] for r in spark.sql("SHOW DATABASES").collect())
out["partitions"] = [r[0] for r in spark.sql("SHOW PARTITIONS s.t").collect()]
rows = spark.sql("SELECT id, name, dt FROM s.t ORDER BY id").collect()
out["rows"] = [[r[0], r[1], r[2]] for r in rows]
out["read_seconds"] = round(time.monotonic() - t0, 1)

# The Hive 2.3 client Spark uses (HiveMetaStoreClient, no retries), against the TLS port of
# A: without use.SSL, and with a truststore that does not hold the server's CA.
jvm = spark.sparkContext._jvm


def hive_client(name, **settings):
    conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", args["a"])
    conf.set("hive.metastore.client.socket.timeout", "20s")
    conf.set("hive.metastore.connect.retries", "1")
    for key, value in settings.items():
        conf.set(key, value)
    t0 = time.monotonic()
    try:
        client = jvm.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
        out[name] = {"answer": list(client.getAllDatabases())}
        client.close()
    except Exception as exc:  # py4j's Py4JJavaError
        java = getattr(exc, "java_exception", None)
        out[name] = {"error": str(java.toString() if java is not None else exc)[:500]}
    out[name]["seconds"] = round(time.monotonic() - t0, 1)


hive_client("plaintext", **{"hive.metastore.use.SSL": "false"})
hive_client(
    "untrusted",
    **{
        "hive.metastore.use.SSL": "true",
        "hive.metastore.truststore.path": args["other_truststore"],
        "hive.metastore.truststore.password": args["password"],
    },
)
spark.stop()
print("RESULT-JSON " + json.dumps(out), flush=True)
"""


def _truststore(ca: Path, store: Path) -> Path:
    """A JKS truststore holding ``ca`` (what Hive 2.3's TSSLTransportFactory loads)."""
    subprocess.run(
        ["keytool", "-importcert", "-noprompt", "-alias", "hms-ca", "-file", str(ca),
         "-keystore", str(store), "-storetype", "JKS", "-storepass", TRUSTSTORE_PASSWORD],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return store


def _run(args: dict[str, str], log: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT-JSON ")]
    assert proc.returncode == 0 and lines, f"spark job failed, see {log}:\n{proc.stderr[-5000:]}"
    return json.loads(lines[-1].removeprefix("RESULT-JSON "))


def test_spark_writes_through_one_tls_instance_and_reads_through_another(
    pg_url: str, tmp_path: Path
) -> None:
    pytest.importorskip("pyspark")
    pki = make_pki(tmp_path / "pki")
    warehouse = tmp_path / "warehouse"
    tls = ("--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key))
    a = ServerProcess(pg_url, warehouse, tmp_path / "a.log", *tls)
    b = ServerProcess(pg_url, warehouse, tmp_path / "b.log", *tls)
    try:
        args = {
            "a": a.uri,
            "b": b.uri,
            "warehouse": str(warehouse),
            "truststore": str(_truststore(pki.ca, tmp_path / "truststore.jks")),
            "other_truststore": str(_truststore(pki.other_ca, tmp_path / "other.jks")),
            "password": TRUSTSTORE_PASSWORD,
        }
        result = _run(args, tmp_path / "spark.log")

        # Spark read through B, over TLS, what Spark wrote through A, over TLS.
        assert result["databases"] == ["default", "s"]
        assert result["partitions"] == ["dt=2024-01-01", "dt=2024-01-02"]
        assert result["rows"] == [
            [1, "a", "2024-01-01"],
            [2, "b", "2024-01-01"],
            [3, "c", "2024-01-02"],
        ]

        # Without use.SSL the Hive client gets a transport error at once, not a hang.
        plain = result["plaintext"]
        assert "TTransportException" in plain.get("error", ""), plain
        assert plain["seconds"] < 15, plain
        # A truststore without our CA: the client refuses the server's certificate (the
        # server logs the client's alert, below). Over 127.0.0.1 Hive 2.3 skips the host name
        # check (HiveAuthUtils.getSSLSocketWithHttps); to other addresses it checks the SAN.
        untrusted = result["untrusted"]
        assert "TTransportException" in untrusted.get("error", ""), untrusted
        assert untrusted["seconds"] < 15, untrusted

        # A Python client verifying the CA sees the same partitions through B.
        client = make_client(hms_service, "127.0.0.1", b.port, cafile=str(pki.ca), timeout=30_000)
        try:
            assert client.get_partition_names("s", "t", -1) == ["dt=2024-01-01", "dt=2024-01-02"]
        finally:
            client.close()
    finally:
        a.stop()
        b.stop()
    served = (tmp_path / "a.log").read_text()
    assert "TLS handshake failed: WRONG_VERSION_NUMBER" in served  # the plaintext client
    assert "TLS handshake failed: SSLV3_ALERT_CERTIFICATE_UNKNOWN" in served  # the untrusting one
