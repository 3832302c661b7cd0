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


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"- port: 9083\n", "holds a list, not settings: write one `setting: value` per line"),
        (b"9083\n", "holds a single value (9083), not settings"),
        (b"port: 9083\n\tprewarm: false\n", "is not valid YAML: line 2, column 1: found character"),
        (b"port: 9083 # \xff\n", "is not UTF-8 text (byte 13 is 0xff): save it as UTF-8 YAML"),
    ],
)
def test_a_settings_file_that_is_not_a_yaml_mapping_is_named_with_what_it_must_hold(
    content: bytes, expected: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    conf = tmp_path / "proxy.yaml"
    conf.write_bytes(content)
    err = _refused(capsys, "init-db", "--config", str(conf))
    assert err.startswith(f"hms-cache-proxy: {conf} ") or err.startswith(
        f"hms-cache-proxy: config file {conf} "
    )
    assert expected in err


def test_a_settings_file_that_is_a_directory_is_not_called_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    err = _refused(capsys, "init-db", "--config", str(tmp_path))
    assert err == (
        f"hms-cache-proxy: config file {tmp_path} is a directory: give the YAML settings file "
        "itself (conf/hms-cache-proxy.yaml lists every setting)"
    )


def test_a_variable_close_to_a_setting_is_refused_with_the_setting_it_meant(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the flag is --tls-cert, so HMS_CACHE_PROXY_TLS_CERT is easy to write; ignored, the
    # instance would have started without TLS
    monkeypatch.setenv("HMS_CACHE_PROXY_TLS_CERT", "server.pem")
    err = _refused(capsys, "init-db", "--database-url", "sqlite:///m.db")  # init-db: never serves
    assert err == (
        "hms-cache-proxy: HMS_CACHE_PROXY_TLS_CERT: not a setting; did you mean "
        "HMS_CACHE_PROXY_TLS_CERT_FILE?"
    )
    monkeypatch.delenv("HMS_CACHE_PROXY_TLS_CERT")
    monkeypatch.setenv("HMS_CACHE_PROXY_DATABSE_URL", "sqlite:///other.db")
    err = _refused(capsys, "init-db", "--database-url", "sqlite:///m.db")
    assert err.endswith("did you mean HMS_CACHE_PROXY_DATABASE_URL?")


def test_a_variable_far_from_every_setting_is_only_logged(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # what Kubernetes adds for a Service named hms-cache-proxy: not ours, not fatal
    monkeypatch.setenv("HMS_CACHE_PROXY_SERVICE_HOST", "10.0.0.11")
    with caplog.at_level("WARNING", logger="hms_cache_proxy"):
        assert main(["init-db", "--database-url", f"sqlite:///{tmp_path / 'm.db'}"]) == 0
    assert "HMS_CACHE_PROXY_SERVICE_HOST is not a setting and is ignored" in caplog.text


def test_a_kubernetes_service_link_in_the_port_variable_says_where_it_came_from(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HMS_CACHE_PROXY_PORT", "tcp://10.0.0.11:9083")
    err = _refused(capsys, "init-db", "--database-url", "sqlite:///m.db")
    assert err.startswith("hms-cache-proxy: HMS_CACHE_PROXY_PORT: ")
    assert err.endswith(
        "(got 'tcp://10.0.0.11:9083'); Kubernetes sets this variable for a Service of the "
        "same name: give the pod enableServiceLinks: false"
    )


def test_the_operations_page_quotes_these_errors_as_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    quoted = page.split("## Starting an instance", 1)[1].split("```", 2)[1].strip().splitlines()
    # serve stops at its settings, before it reads server.pem or opens a port
    printed = [_refused(capsys, "serve", "--tls-cert", "server.pem")]
    monkeypatch.setenv("HMS_CACHE_PROXY_PORT", "ninety")
    printed.append(_refused(capsys, "init-db"))
    monkeypatch.delenv("HMS_CACHE_PROXY_PORT")
    (tmp_path / "proxy.yaml").write_text("prot: 9083\n")
    printed.append(_refused(capsys, "init-db", "--config", "proxy.yaml"))
    monkeypatch.setenv("HMS_CACHE_PROXY_TLS_CERT", "server.pem")
    printed.append(_refused(capsys, "init-db"))
    monkeypatch.delenv("HMS_CACHE_PROXY_TLS_CERT")
    (tmp_path / "proxy.yaml").write_text("- port: 9083\n")
    printed.append(_refused(capsys, "init-db", "--config", "proxy.yaml"))
    assert quoted == printed
