"""Upstream mode's settings (one line naming the setting as given when they cannot work) and
the message headers it relays (byte for byte what Apache Thrift writes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from hms_cache_proxy.cli import main
from hms_cache_proxy.config import Settings, load_settings
from hms_cache_proxy.server import message_bytes


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("HMS_CACHE_PROXY_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_upstream_and_a_database_url_together_are_refused_naming_both_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refused(
        capsys, "serve", "--upstream", "thrift://hms:9083", "--database-url", "sqlite:///x.db"
    )
    assert err.startswith("hms-cache-proxy: --upstream and --database-url are alternatives")


def test_a_malformed_upstream_variable_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HMS_CACHE_PROXY_UPSTREAM_URI", "http://hms:9083")
    err = _refused(capsys, "serve")
    assert "HMS_CACHE_PROXY_UPSTREAM_URI" in err and "thrift://HOST:PORT" in err


@pytest.mark.parametrize(
    "uri", ["thrift://hms", "thrift://:9083", "thrift://hms:9083/db", "hms:9083", "thrift://h:x"]
)
def test_only_thrift_host_port_is_an_upstream(uri: str) -> None:
    with pytest.raises(ValueError, match="thrift://"):
        Settings(upstream_uri=uri)


def test_upstream_from_the_file_and_the_documented_default_database_url(tmp_path: Path) -> None:
    conf = tmp_path / "c.yaml"
    conf.write_text(
        "upstream_uri: thrift://metastore:9083\ndatabase_url: sqlite:///hms-cache-proxy.db\n"
        "upstream_max_connections: 3\n"
    )
    settings = load_settings(conf)
    assert settings.upstream_uri == "thrift://metastore:9083"
    assert settings.upstream_max_connections == 3
    assert Settings(upstream_uri=" ").upstream_uri is None  # blank is unset


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize(
    ("name", "mtype", "seqid"),
    [("get_database", 1, 7), ("x", 4, 0), ("é", 3, -5), ("a", 2, 2**31 - 1)],
)
def test_headers_are_what_apache_thrift_writes(
    name: str, mtype: int, seqid: int, compact: bool
) -> None:
    buf = TMemoryBuffer()
    proto = (TCompactProtocol if compact else TBinaryProtocol)(buf)
    proto.writeMessageBegin(name, mtype, seqid)
    assert message_bytes.header(name, mtype, seqid, compact=compact) == buf.getvalue()


@pytest.mark.parametrize(
    "rule",
    [
        {"read_only": True},
        {"allowed_databases": ["sales"]},
        {"allowed_databases_by_user": {"a": ["x"]}},
    ],
)
def test_access_rules_the_pass_through_cannot_keep_are_refused(rule: dict) -> None:
    with pytest.raises(ValueError, match="cannot be applied with upstream_uri"):
        Settings(upstream_uri="thrift://hms:9083", **rule)


def test_an_upstream_sasl_user_needs_its_password_and_buffered_transport() -> None:
    with pytest.raises(ValueError, match="upstream_sasl_password is missing"):
        Settings(upstream_uri="thrift://hms:9083", upstream_sasl_user="proxy")
    with pytest.raises(ValueError, match="needs upstream_transport: buffered"):
        Settings(
            upstream_uri="thrift://hms:9083",
            upstream_sasl_user="proxy",
            upstream_sasl_password="pw",
            upstream_transport="framed",
        )


def test_logging_in_as_each_caller_needs_the_callers_logins_and_the_proxys_own() -> None:
    own = {"upstream_sasl_user": "proxy", "upstream_sasl_password": "pw"}
    callers = {"sasl_enabled": True, "sasl_users": {"alice": "pw"}}
    for given in (own, callers):
        with pytest.raises(ValueError, match="upstream_sasl_as_caller needs sasl_enabled"):
            Settings(upstream_uri="thrift://hms:9083", upstream_sasl_as_caller=True, **given)
    Settings(upstream_uri="thrift://hms:9083", upstream_sasl_as_caller=True, **own, **callers)


def test_the_upstream_sasl_password_is_a_secret() -> None:
    settings = Settings(upstream_sasl_user="proxy", upstream_sasl_password="s3cret-pw")
    assert "s3cret-pw" in settings.secrets()
    assert settings.redacted()["upstream_sasl_password"] == "********"


def _site(tmp_path: Path, props: dict[str, str]) -> Path:
    from tests.unit.test_hive_site import hive_site

    return hive_site(tmp_path, props)


def test_upstream_from_hive_site_takes_the_first_metastore_uri_and_no_database(
    tmp_path: Path,
) -> None:
    site = _site(
        tmp_path,
        {
            "hive.metastore.uris": "thrift://hms-a:9083, thrift://hms-b:9083",
            "javax.jdo.option.ConnectionURL": "jdbc:derby:;databaseName=metastore_db",
        },
    )
    notes: list[str] = []
    settings = load_settings(None, hive_site=str(site), upstream_from_hive_site=True, notes=notes)
    assert settings.upstream_uri == "thrift://hms-a:9083"
    assert settings.database_url == Settings.model_fields["database_url"].default  # not read
    assert any("first of its 2 URIs" in n for n in notes)
    given = load_settings(
        None, hive_site=str(site), upstream_from_hive_site=True, upstream_uri="thrift://c:1"
    )
    assert given.upstream_uri == "thrift://c:1"


def test_upstream_from_hive_site_without_uris_or_without_a_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    site = _site(tmp_path, {"hive.metastore.warehouse.dir": "/wh"})
    err = _refused(capsys, "serve", "--hive-site", str(site), "--upstream-from-hive-site")
    assert "no hive.metastore.uris" in err and "--upstream" in err
    err = _refused(capsys, "serve", "--upstream-from-hive-site")
    assert err.startswith("hms-cache-proxy: --upstream-from-hive-site needs --hive-site")
