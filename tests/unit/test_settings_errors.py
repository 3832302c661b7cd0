"""A settings error is one line naming the setting the way the user gave it, exit status 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hms_cache_proxy.cli import main


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("HMS_CACHE_PROXY_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "pydantic" not in err and "validation error" not in err and "Traceback" not in err
    return err.strip()


def test_tls_cert_flag_without_key_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, "serve", "--tls-cert", "server.pem")
    assert err == (
        "hms-cache-proxy: --tls-cert and --tls-key must be set together (a PEM certificate "
        "and its private key): --tls-key is missing"
    )


def test_tls_key_variable_without_cert_names_the_variables(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HMS_CACHE_PROXY_TLS_KEY_FILE", "server.key")
    err = _refused(capsys, "serve")
    assert "HMS_CACHE_PROXY_TLS_KEY_FILE" in err
    assert err.endswith("HMS_CACHE_PROXY_TLS_CERT_FILE is missing")


def test_tls_cert_in_the_file_without_key_names_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    conf = tmp_path / "proxy.yaml"
    conf.write_text("tls_cert_file: server.pem\n")
    err = _refused(capsys, "serve", "--config", str(conf))
    assert err.endswith(f"tls_key_file is missing (in {conf})")


def test_a_bad_value_names_its_source_and_what_is_expected(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    err = _refused(capsys, "serve", "--port", "70000")
    assert err.startswith("hms-cache-proxy: --port: ") and "65535" in err and "70000" in err
    monkeypatch.setenv("HMS_CACHE_PROXY_PORT", "ninety")
    err = _refused(capsys, "serve")
    assert err.startswith("hms-cache-proxy: HMS_CACHE_PROXY_PORT: ") and "integer" in err
    monkeypatch.delenv("HMS_CACHE_PROXY_PORT")
    conf = tmp_path / "proxy.yaml"
    conf.write_text("prot: 9083\n")
    err = _refused(capsys, "init-db", "--config", str(conf))
    assert err.startswith(f"hms-cache-proxy: prot in {conf}: unknown setting")


def test_a_secret_is_never_echoed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HMS_CACHE_PROXY_SASL_USERS", "not-json-secret-value")
    err = _refused(capsys, "serve")
    assert "HMS_CACHE_PROXY_SASL_USERS" in err and "secret-value" not in err
    monkeypatch.delenv("HMS_CACHE_PROXY_SASL_USERS")
    err = _refused(capsys, "init-db", "--database-url", "mysql://hive:pw-secret@db/hive")
    assert err.startswith("hms-cache-proxy: --database-url: ") and "pw-secret" not in err
