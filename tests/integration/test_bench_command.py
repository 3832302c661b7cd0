"""`hms-cache-proxy bench --quick` runs end to end and writes its JSON, Markdown and PNG.

A tiny subset of cases on SQLite, without the stock server: this checks the plumbing (server
and client processes, both client modes, 1 and 8 clients, the report's keys), not the figures.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# About a minute: once the service has its cache, the run also starts the cache servers that
# measure prewarm, memory and strong mode.
pytestmark = pytest.mark.slow


def test_bench_quick_writes_json_markdown_and_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "results"
    docs = tmp_path / "docs"
    cmd = [
        sys.executable,
        "-m",
        "hms_cache_proxy",
        "bench",
        "--quick",
        "--database",
        "sqlite",
        "--no-stock",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--cases",
        "get_table",
        "get_partitions_100",
        "add_partitions_100",
        "--output",
        str(out),
        "--write-docs",
        str(docs),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    report = json.loads((out / "latest.json").read_text())
    assert {
        "started",
        "command",
        "machine",
        "settings",
        "targets",
        "results",
        "ratios",
        "cache",
        "legend",
        "run_seconds",
    } <= set(report)
    assert report["machine"]["cpus"] and report["machine"]["python"]
    targets = {t["key"]: t for t in report["targets"]}
    assert targets["db"]["status"] == "ok"
    assert targets["floor"]["status"] == "ok"
    assert "stock" not in targets
    # Without a cache in the service the column says so instead of failing.
    assert targets["cache"]["status"] in ("ok", "unavailable")
    if targets["cache"]["status"] == "ok":
        assert isinstance(report["cache"]["memory"]["rss_bytes_per_partition"], float)
        assert report["cache"]["propagation"]["status"] == "n/a"  # SQLite

    ok = {
        (r["target"], r["case"], r["clients"], r["mode"])
        for r in report["results"]
        if r["status"] == "ok"
    }
    assert ("db", "get_table", 1, "decoded") in ok
    assert ("db", "get_table", 8, "decoded") in ok
    assert ("db", "get_partitions_100", 1, "bytes") in ok
    assert ("db", "add_partitions_100", 1, "decoded") in ok
    assert ("floor", "get_table", 1, "decoded") in ok
    for r in report["results"]:
        if r["status"] == "ok":
            assert r["calls"] > 0 and r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"]
            assert r["calls_per_s"] > 0
    assert any(
        r["case"] == "get_table" and (r["ours"], r["vs"]) == ("db", "floor")
        for r in report["ratios"]
    )

    md = (out / "latest.md").read_text()
    assert "| case | clients | client |" in md and "get_partitions_100" in md
    assert "bytes" in md and "decoded" in md
    png = (out / "latest.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (docs / "benchmarks.md").is_file() and (docs / "benchmarks.png").is_file()
    assert "![calls/s" in (docs / "benchmarks.md").read_text()


def _postgres_under(directory: Path) -> dict[int, str]:
    """Running postmasters whose data directory lies under ``directory``: pid -> directory."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if words and words[0].endswith("postgres") and "-D" in words:
            data = words[words.index("-D") + 1]
            if data.startswith(f"{directory}/"):
                found[int(entry.name)] = data
    return found


def test_bench_stopped_by_sigterm_removes_its_postgres(tmp_path: Path) -> None:
    """A bench stopped by SIGTERM (a CI timeout, `kill`) stops its throwaway PostgreSQL and
    removes its files, as it does when it ends or gets Ctrl-C."""
    # The bench's temporary files go here (TMPDIR), so its PostgreSQL is told from others'; a
    # directory of its own under /tmp, since the server may run as another user (initdb
    # refuses root) and pytest's tmp_path is private.
    scratch = Path(tempfile.mkdtemp(prefix="bench-sigterm-", dir="/tmp"))
    scratch.chmod(0o755)
    cmd = [sys.executable, "-m", "hms_cache_proxy", "bench", "--targets", "db", "--no-stock"]
    cmd += ["--clients", "1", "--duration", "30", "--cases", "get_table", "--output", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        ours: dict[int, str] = {}
        while not ours and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            ours = _postgres_under(scratch)
        assert ours, "the bench never started its PostgreSQL"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 30
        while _postgres_under(scratch) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _postgres_under(scratch), "its PostgreSQL is still running"
        for data in ours.values():
            assert not Path(data).exists(), f"{data} was left behind"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
