"""``hms-cache-proxy check``, short: two caching instances (and the database path) as real
``serve`` processes on the session PostgreSQL, clients writing and reading at random, and
every fault kind injected at least once (SIGKILL and restart, PostgreSQL restart, a stalled
poller, the notification log purged behind a stalled instance, connections cut mid-call).
The history must show no violation of any invariant."""

from __future__ import annotations

from typing import Any

import pytest

from hms_cache_proxy.check.faults import KINDS
from hms_cache_proxy.check.runner import CheckConfig, run_check

pytestmark = [pytest.mark.postgres]


def test_a_short_run_with_every_fault_kind_finds_no_violation(
    pg_server: Any, pg_url: str, capsys: Any
) -> None:
    cfg = CheckConfig(
        instances=2,
        clients=4,
        duration=4.0,
        faults=list(KINDS),
        database_url=pg_url,
        fault_interval=0.5,
        stall_seconds=1.0,
        seed=3,
    )
    report = run_check(cfg, postgres=pg_server)
    from hms_cache_proxy.check.report import text

    print(text(report))
    assert report["violations"]["list"] == []
    assert report["faults"]["errors"] == []
    assert all(report["faults"]["counts"][kind] >= 1 for kind in KINDS), report["faults"]
    purges = [f for f in report["faults"]["list"] if f["kind"] == "purge"]
    assert all("hole noticed" in f["detail"] or "inconclusive" in f["detail"] for f in purges)
    ops = report["operations"]
    assert ops["commits_acknowledged"] > 0 and ops["outcome_unknown"] > 0, ops
    assert report["checks"]["reads_checked"] > 0 and report["checks"]["cache_comparisons"] > 0


def test_a_short_run_with_sidecars_in_front_of_the_caching_instances_finds_no_violation(
    pg_server: Any, pg_url: str, capsys: Any
) -> None:
    """Upstream mode under the checker: writers on both tiers, every fault kind, kills hitting
    sidecars and their upstreams."""
    cfg = CheckConfig(
        instances=2,
        sidecars=2,
        clients=6,
        duration=4.0,
        faults=list(KINDS),
        database_url=pg_url,
        fault_interval=0.5,
        stall_seconds=1.0,
        seed=5,
    )
    report = run_check(cfg, postgres=pg_server)
    from hms_cache_proxy.check.report import text

    print(text(report))
    assert report["violations"]["list"] == []
    assert report["faults"]["errors"] == []
    assert all(report["faults"]["counts"][kind] >= 1 for kind in KINDS), report["faults"]
    assert report["checks"]["reads_checked"] > 0 and report["checks"]["cache_comparisons"] > 0
    by_instance = report["operations"]["acknowledged_by_instance"]
    assert by_instance.get(2, 0) > 0 and by_instance.get(3, 0) > 0, by_instance  # the sidecars


def test_bad_options_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="pg-restart faults need a PostgreSQL"):
        run_check(CheckConfig(faults=["pg-restart"], database_url="postgresql://u@127.0.0.1:1/x"))
    with pytest.raises(ValueError, match="must be a PostgreSQL URL"):
        run_check(CheckConfig(database_url="sqlite:///x.db"))
