"""The transaction cases of `hms-cache-proxy bench` run end to end against this service on
PostgreSQL: Hive's query sequences, heartbeat and check_lock, and the history knob, whose
finished transactions are put in before its cases and taken out after, and the txns the cases
hold open (get_valid_write_ids' open one, heartbeat's, check_lock's) are ended after them.
Plumbing, not figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from hms_cache_proxy.bench.txn_cases import HELD_HOST
from hms_cache_proxy.bench.txn_history import HISTORY_USER
from hms_cache_proxy.store.db import schema

ROOT = Path(__file__).resolve().parents[2]
CASES = [
    "get_valid_write_ids",
    "acid_read_query",
    "acid_insert",
    "heartbeat",
    "check_lock",
    "get_open_txns_history",
]

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_txn_cases_and_history_run_against_the_database_path(pg_url: str, tmp_path: Path) -> None:
    out = tmp_path / "results"
    cmd = [
        sys.executable,
        "-m",
        "hms_cache_proxy",
        "bench",
        "--targets",
        "db",
        "--database-url",
        pg_url,
        "--clients",
        "1",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--cases",
        *CASES,
        "--output",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    report = json.loads((out / "latest.json").read_text())
    status = {r["case"]: (r["status"], r["reason"]) for r in report["results"]}
    assert status == {case: ("ok", "") for case in CASES}, status
    assert "history: 100,000 finished txns added" in proc.stdout

    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            left = conn.execute(
                select(func.count()).where(schema.TXNS.c.TXN_USER == HISTORY_USER)
            ).scalar()
            held_open = conn.execute(
                select(func.count()).where(
                    schema.TXNS.c.TXN_HOST == HELD_HOST, schema.TXNS.c.TXN_STATE == "o"
                )
            ).scalar()
    finally:
        engine.dispose()
    assert left == 0
    # get_valid_write_ids' open txn, heartbeat's and check_lock's were ended after their runs
    assert held_open == 0
