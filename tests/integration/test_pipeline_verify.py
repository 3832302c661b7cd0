"""``pipeline verify --no-spark`` against a real service: the Thrift half of verification
(visibility and statistics), which needs no Spark, and its exit status."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.cli import main
from hms_cache_proxy.pipeline import manifest
from tests.support.metastore import partition, table


def _setup(client: Any, T: Any) -> None:
    client.create_database(T.Database(name="shop", description="", parameters={}))
    client.create_table(table(T, "shop", "events", ("a:int",), ("ds:string",)))
    stats = {"spark.sql.statistics.numRows": "10"}
    client.add_partition(partition(T, "shop", "events", ["2024-03-01"], ("a:int",), params=stats))


def _manifest(path: Path, uri: str, *names: str, stats: bool = False) -> None:
    m = manifest.Manifest(database="shop")
    t = time.time() - 1.0
    for name in names:
        m.record(
            manifest.Entry(
                table="events",
                partition=name,
                rows=10,
                job="etl",
                committed_at=t,
                stats=stats,
                visible_at=t + 0.02,
                observed_on=uri,
            )
        )
    manifest.save(path, m)


def _verify(service: Any, tmp_path: Path, *extra: str) -> int:
    return main(
        [
            "pipeline",
            "verify",
            "--metastore-uri",
            f"thrift://127.0.0.1:{service.port}",
            "--warehouse",
            str(tmp_path / "warehouse"),
            "--database",
            "shop",
            "--manifest",
            str(tmp_path / "m.json"),
            "--report",
            str(tmp_path / "r.json"),
            "--no-spark",
            *extra,
        ]
    )


def test_verify_passes_when_every_partition_and_its_stats_are_visible(
    service: Any, client: Any, T: Any, tmp_path: Path, capsys: Any
) -> None:
    _setup(client, T)
    uri = f"thrift://127.0.0.1:{service.port}"
    _manifest(tmp_path / "m.json", uri, "ds=2024-03-01", stats=True)
    assert _verify(service, tmp_path, "--timeout", "10") == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["problems"] == []
    [p] = report["partitions"]
    assert p["exact"]
    assert p["lag_s"] == pytest.approx(0.02)
    assert report["summary"]["exact"]["count"] == 1
    assert "verify: 1 partitions, 0 problems" in capsys.readouterr().out


def test_verify_fails_when_a_partition_never_appears(
    service: Any, client: Any, T: Any, tmp_path: Path, capsys: Any
) -> None:
    _setup(client, T)
    uri = f"thrift://127.0.0.1:{service.port}"
    _manifest(tmp_path / "m.json", uri, "ds=2024-03-01", "ds=2024-03-09")
    assert _verify(service, tmp_path, "--timeout", "0.5") == 1
    out = capsys.readouterr().out
    assert "FAIL events/ds=2024-03-09: not visible" in out
    assert "NOT VISIBLE" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert [p["partition"] for p in report["partitions"] if p["visible_at"] is None] == [
        "ds=2024-03-09"
    ]


def test_verify_fails_when_statistics_are_missing(
    service: Any, client: Any, T: Any, tmp_path: Path, capsys: Any
) -> None:
    _setup(client, T)
    m = manifest.Manifest(database="shop", tables={"events": {"column_stats": ["a"]}})
    m.record(
        manifest.Entry("events", "ds=2024-03-01", rows=11, job="etl", committed_at=1.0, stats=True)
    )
    manifest.save(tmp_path / "m.json", m)
    assert _verify(service, tmp_path, "--timeout", "0.5") == 1
    out = capsys.readouterr().out
    assert "spark.sql.statistics.numRows='10', expected 11" in out
    assert "events: no column statistics for a" in out


def test_verify_polls_a_tls_instance_with_the_given_ca(
    sqlite_url: str, tmp_path: Path, capsys: Any
) -> None:
    from hms_cache_proxy.idl import hms
    from hms_cache_proxy.pipeline import thrift_client
    from tests.support.security import make_pki
    from tests.support.server import running_service

    pki = make_pki(tmp_path / "pki")
    tls = {"tls_cert_file": str(pki.server_cert), "tls_key_file": str(pki.server_key)}
    with running_service(sqlite_url, tmp_path / "wh", **tls) as service:
        uri = f"thrift://127.0.0.1:{service.port}"
        with thrift_client.connect(uri, tls_ca=str(pki.ca)) as c:
            _setup(c, hms)
        _manifest(tmp_path / "m.json", uri, "ds=2024-03-01")
        assert _verify(service, tmp_path, "--timeout", "10", "--tls-ca", str(pki.ca)) == 0
        # Without the CA the job's plain client cannot talk to the TLS port: it fails clearly.
        capsys.readouterr()
        assert _verify(service, tmp_path, "--timeout", "2") != 0
        assert "give --tls-ca" in capsys.readouterr().err
