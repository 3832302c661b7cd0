"""The pipeline's manifest, lag arithmetic, date and argument handling: no Spark, no server."""

from __future__ import annotations

import argparse
import builtins
import datetime
import json
from pathlib import Path

import pytest

from hms_cache_proxy.cli import main
from hms_cache_proxy.pipeline import manifest, session
from hms_cache_proxy.pipeline.__main__ import main as module_main
from hms_cache_proxy.pipeline.args import manifest_path, parse_uri, resolve_dates, spark_conf
from hms_cache_proxy.pipeline.errors import PipelineError
from hms_cache_proxy.pipeline.source import events_sql, partition_name


def _entry(name: str = "ds=2024-03-01", t: float = 100.0, **kw: object) -> manifest.Entry:
    return manifest.Entry(table="events", partition=name, rows=10, job="etl", committed_at=t, **kw)


def _dates(**kw: object) -> argparse.Namespace:
    base = {"date": None, "start": None, "end": None, "days": None}
    base.update(kw)
    return argparse.Namespace(**base)


D = datetime.date


# -- manifest ------------------------------------------------------------------------------------


def test_manifest_round_trips_through_its_file(tmp_path: Path) -> None:
    m = manifest.Manifest(database="shop")
    m.record(_entry(stats=True, visible_at=100.5, observed_on="thrift://b:1"))
    m.tables["events"] = {"column_stats": ["amount"]}
    path = tmp_path / "sub" / "shop.json"
    manifest.save(path, m)
    assert manifest.load(path, "shop") == m
    assert not list(path.parent.glob("shop.json.*"))  # the temporary file was renamed


def test_recording_a_partition_again_replaces_its_entry() -> None:
    m = manifest.Manifest(database="shop")
    m.record(_entry(t=1.0))
    m.record(_entry(t=2.0))
    assert list(m.partitions) == ["events/ds=2024-03-01"]
    assert m.partitions["events/ds=2024-03-01"].committed_at == 2.0


def test_a_missing_manifest_loads_empty(tmp_path: Path) -> None:
    assert manifest.load(tmp_path / "none.json", "shop") == manifest.Manifest(database="shop")


def test_a_manifest_of_another_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    manifest.save(path, manifest.Manifest(database="other"))
    with pytest.raises(PipelineError, match="is for database 'other', not 'shop'"):
        manifest.load(path, "shop")


def test_a_file_that_is_not_a_manifest_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("{not json")
    with pytest.raises(PipelineError, match="cannot read the manifest"):
        manifest.load(path, "shop")
    path.write_text(json.dumps({"partitions": {}}))
    with pytest.raises(PipelineError, match="not a pipeline manifest"):
        manifest.load(path, "shop")


# -- lag -----------------------------------------------------------------------------------------


def test_percentiles_are_nearest_rank() -> None:
    values = [float(i) for i in range(1, 101)]
    assert manifest.percentile(values, 50) == 50.0
    assert manifest.percentile(values, 99) == 99.0
    assert manifest.percentile(values, 100) == 100.0
    assert manifest.percentile([3.0], 99) == 3.0
    with pytest.raises(ValueError):
        manifest.percentile([], 50)


def test_summary_of_lags() -> None:
    assert manifest.summarize([0.3, 0.1, 0.2]) == {"count": 3, "p50": 0.2, "p99": 0.3, "max": 0.3}
    assert manifest.summarize([]) == {"count": 0}


def test_lag_is_exact_when_the_writer_observed_the_same_instance() -> None:
    e = _entry(t=100.0, visible_at=100.25, observed_on="thrift://b:1")
    v = manifest.visibility(e, seen_at=160.0, uri="thrift://b:1")
    assert v.exact and v.visible_at == 100.25 and v.lag == pytest.approx(0.25)


def test_lag_is_bounded_by_verifys_first_sight_otherwise() -> None:
    observed_elsewhere = _entry(t=100.0, visible_at=100.25, observed_on="thrift://a:1")
    v = manifest.visibility(observed_elsewhere, seen_at=160.0, uri="thrift://b:1")
    assert not v.exact and v.lag == pytest.approx(60.0)
    never = manifest.visibility(_entry(t=100.0), seen_at=None, uri="thrift://b:1")
    assert never.lag is None and never.visible_at is None


def test_a_partition_verify_cannot_see_has_no_lag_even_if_the_writer_saw_it() -> None:
    gone = _entry(t=100.0, visible_at=100.25, observed_on="thrift://b:1")
    v = manifest.visibility(gone, seen_at=None, uri="thrift://b:1")
    assert v.visible_at is None and v.lag is None


# -- dates and arguments -------------------------------------------------------------------------


def test_date_forms() -> None:
    assert resolve_dates(_dates(date=D(2024, 3, 1))) == [D(2024, 3, 1)]
    assert resolve_dates(_dates(start=D(2024, 2, 28), end=D(2024, 3, 1))) == [
        D(2024, 2, 28),
        D(2024, 2, 29),
        D(2024, 3, 1),
    ]
    assert resolve_dates(_dates(start=D(2024, 1, 1), days=365))[-1] == D(2024, 12, 30)
    assert resolve_dates(_dates(end=D(2024, 1, 2), days=2)) == [D(2024, 1, 1), D(2024, 1, 2)]
    assert resolve_dates(_dates(days=3), today=D(2024, 1, 3)) == [
        D(2024, 1, 1),
        D(2024, 1, 2),
        D(2024, 1, 3),
    ]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"date": D(2024, 1, 1), "days": 2}, "--date cannot be combined"),
        ({"start": D(2024, 1, 1)}, "--start needs --end or --days"),
        ({"end": D(2024, 1, 1)}, "--end needs --start or --days"),
        ({"start": D(2024, 1, 2), "end": D(2024, 1, 1)}, "is before --start"),
        ({"start": D(2024, 1, 1), "end": D(2024, 1, 3), "days": 3}, "not all three"),
        ({}, "which days"),
    ],
)
def test_bad_date_combinations_are_named(kw: dict[str, object], message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        resolve_dates(_dates(**kw))


def test_metastore_uris_are_checked() -> None:
    assert parse_uri("thrift://hms-a:9083") == ("hms-a", 9083)
    for bad in ("hms:9083", "thrift://hms", "thrift://hms:0", "http://hms:9083"):
        with pytest.raises(PipelineError, match="thrift://HOST:PORT"):
            parse_uri(bad)


def test_manifest_path_defaults_next_to_a_local_warehouse(tmp_path: Path) -> None:
    ns = argparse.Namespace(manifest=None, warehouse=f"file:{tmp_path}", database="shop")
    assert manifest_path(ns) == tmp_path / "_pipeline" / "shop.json"
    ns.warehouse = "s3a://bucket/wh"
    with pytest.raises(PipelineError, match="give --manifest"):
        manifest_path(ns)
    ns.manifest = str(tmp_path / "m.json")
    assert manifest_path(ns) == tmp_path / "m.json"


def test_spark_conf_pairs() -> None:
    assert spark_conf(argparse.Namespace(conf=["a.b=1", "c=x=y"])) == {"a.b": "1", "c": "x=y"}
    with pytest.raises(PipelineError, match="KEY=VALUE"):
        spark_conf(argparse.Namespace(conf=["novalue"]))


BASE = ["--metastore-uri", "thrift://127.0.0.1:9083", "--warehouse", "/tmp/wh"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pipeline", "etl", "--warehouse", "/w", "--date", "2024-01-01"], "--metastore-uri"),
        (["pipeline", "etl", *BASE, "--date", "2024-13-01"], "dates are YYYY-MM-DD"),
        (["pipeline", "backfill", *BASE, "--days", "0"], "--days must be between 1"),
        (["pipeline", "etl", *BASE, "--date", "x", "--rows-per-day", "0"], "YYYY-MM-DD"),
        (["pipeline", "etl", *BASE, "--days", "1", "--rows-per-day", "0"], "at least 1"),
        (["pipeline", "verify", *BASE, "--database", "Bad-Name"], "database names"),
        (["pipeline", "etl", "--metastore-uri", "localhost:9083", "--warehouse", "/w"], "thrift"),
        (["pipeline", "nope"], "invalid choice"),
    ],
)
def test_cli_rejects_bad_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_reports_a_bad_date_mix_before_starting_spark(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["pipeline", "etl", *BASE, "--date", "2024-01-01", "--days", "3"]) == 2
    assert "--date cannot be combined" in capsys.readouterr().err


def test_verify_without_a_manifest_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["verify", "--metastore-uri", "thrift://127.0.0.1:1", "--warehouse", str(tmp_path)]
    assert module_main(argv) == 2
    assert "run etl or backfill first" in capsys.readouterr().err


def test_missing_pyspark_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_import = builtins.__import__

    def no_pyspark(name: str, *args: object, **kwargs: object) -> object:
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    with pytest.raises(PipelineError, match=r"hms-cache-proxy\[spark\]"):
        session.require_pyspark()
    assert main(["pipeline", "etl", *BASE, "--date", "2024-01-01"]) == 2
    assert "pip install 'hms-cache-proxy[spark]'" in capsys.readouterr().err


def test_source_sql_names_every_day_and_partition_names_are_hive_style() -> None:
    sql = events_sql([D(2024, 1, 1), D(2024, 1, 2)], 7)
    assert "range(7)" in sql and "('2024-01-01'), ('2024-01-02')" in sql
    assert sql.split(" FROM ")[0].endswith(", ds")
    assert ", ds FROM" not in events_sql([D(2024, 1, 1)], 7, with_ds=False)
    assert partition_name(ds="2024-01-01", country="US") == "ds=2024-01-01/country=US"
