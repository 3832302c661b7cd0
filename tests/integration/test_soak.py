"""`hms-cache-proxy soak`: a very short real run, and the options it refuses.

The run starts a real ``serve`` (cache on) on a fresh PostgreSQL database and 8 client
processes; it is capped by request count, so it ends after exactly that many calls whatever the
machine's speed. What is checked is the plumbing (windows, per-method figures, memory readings,
zero errors, exit status), not the figures.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hms_cache_proxy.bench.soak import UsageError, listening_pid, loopback_target
from hms_cache_proxy.bench.soak_workload import METHODS
from hms_cache_proxy.cli import main

ROOT = Path(__file__).resolve().parents[2]


def soak(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMS_CACHE_PROXY_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "hms_cache_proxy", "soak", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.postgres
def test_a_short_soak_reports_windows_and_no_errors(pg_url: str, tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    docs = tmp_path / "docs"
    calls = 80
    # 6-s windows over at most 30 s: at most 5 windows, too few for the p99 and memory verdict
    # (soak_stats.MIN_STEADY_WINDOWS), so a busy machine cannot fail the run: errors only.
    proc = soak(
        "--clients", "8", "--duration", "30", "--max-requests", str(calls), "--window", "6",
        "--warmup", "0", "--database-url", pg_url, "--output", str(out),
        "--write-docs", str(docs), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["calls_issued"] == calls  # the cap stopped it
    assert report["calls"] == calls  # every call answered
    assert report["windows"], "no windows"
    assert sum(w["calls"] for w in report["windows"]) == calls
    assert sum(w["errors"] for w in report["windows"]) == 0
    assert report["verdict"]["errors"] == 0 and report["verdict"]["passed"]
    assert report["error_messages"] == [] and report["client_failures"] == {}
    assert all(w["rss_bytes"] > 0 for w in report["windows"])  # the server's /proc was read
    assert set(report["methods"]) <= set(METHODS) and "get_table" in report["methods"]
    assert report["server"]["settings"]["cache_enabled"] is True
    text = (docs / "soak.md").read_text()
    assert text.startswith("# Soak run") and "## Windows" in text


def test_a_non_loopback_uri_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["soak", "--uri", "thrift://10.1.2.3:9083", "--duration", "5"]) == 2
    err = capsys.readouterr().err
    assert "10.1.2.3 is not a loopback address" in err
    assert "use 127.0.0.1, ::1 or localhost" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--clients", "4"], "--clients 4: use 8 to 32"),
        (["--clients", "33"], "--clients 33: use 8 to 32"),
        (["--duration", "3600"], "--duration 3600: use more than 0 and at most 1800 s"),
        (["--max-requests", "0"], "--max-requests 0: use 1 to 10,000,000"),
        (["--uri", "thrift://db.example.com:9083"], "db.example.com is not a loopback address"),
        (["--uri", "thrift://127.0.0.1:9083", "--database-url", "sqlite:///x.db"], "with --uri"),
        (["--setting", "no_such_setting=1"], "the service has no setting 'no_such_setting'"),
    ],
)
def test_bad_options_get_a_clear_error(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["soak", *args]) == 2
    assert message in capsys.readouterr().err


def test_loopback_target_accepts_this_machine_only() -> None:
    assert loopback_target("thrift://127.0.0.1:9083") == ("127.0.0.1", 9083)
    assert loopback_target("thrift://127.8.0.1:10000") == ("127.8.0.1", 10000)
    assert loopback_target("thrift://[::1]:9083") == ("::1", 9083)
    assert loopback_target("localhost:9083") == ("localhost", 9083)
    assert loopback_target("thrift://localhost") == ("localhost", 9083)
    for uri in ("thrift://0.0.0.0:9083", "thrift://192.168.1.5:9083", "thrift://[::]:9083"):
        with pytest.raises(UsageError, match="is not a loopback address"):
            loopback_target(uri)
    with pytest.raises(UsageError, match="expected thrift://HOST:PORT"):
        loopback_target("http://127.0.0.1:9083")
    with pytest.raises(UsageError, match="is not a number"):
        loopback_target("thrift://127.0.0.1:x")


def test_listening_pid_finds_the_process_behind_a_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        assert listening_pid(s.getsockname()[1]) == os.getpid()


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["soak", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for option in (
        "--clients",
        "--duration",
        "--max-requests",
        "--uri",
        "--database-url",
        "--output",
        "--write-docs",
        "--window",
        "--warmup",
        "--setting",
    ):
        assert option in out
    assert "loopback" in out and "8..32" in out
