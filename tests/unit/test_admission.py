"""Connection admission (a global limit, a share per client address, a reserve) and the
rate-limited log line for refusals."""

from __future__ import annotations

import logging

import pytest

from hms_cache_proxy.admission import (
    CLIENT_LIMIT,
    GLOBAL_LIMIT,
    RESERVE,
    Admission,
    ConnectionLimits,
    QuietLog,
    client_address,
)


def test_a_client_is_held_to_its_share() -> None:
    adm = Admission(ConnectionLimits(total=100, per_client=3))
    assert [adm.admit("10.0.0.1") for _ in range(4)] == [None, None, None, CLIENT_LIMIT]
    assert adm.admit("10.0.0.2") is None  # another address has its own share
    adm.release("10.0.0.1")
    assert adm.admit("10.0.0.1") is None
    assert (adm.held_by("10.0.0.1"), adm.total) == (3, 4)


def test_the_reserve_goes_only_to_clients_holding_few() -> None:
    adm = Admission(ConnectionLimits(total=10, per_client=8, reserved=4, reserved_per_client=2))
    assert all(adm.admit("a") is None for _ in range(6))  # 6 = total - reserved
    assert adm.admit("a") == RESERVE  # holds 6: the last 4 slots are not for it
    assert adm.admit("b") is None and adm.admit("b") is None
    assert adm.admit("b") == RESERVE  # holds 2, the reserve's threshold
    assert adm.admit("c") is None and adm.admit("c") is None  # 10: all taken
    assert adm.admit("d") == GLOBAL_LIMIT
    for _ in range(2):
        adm.release("c")
    assert adm.admit("d") is None


def test_no_share_and_no_reserve_is_one_global_limit() -> None:
    adm = Admission(ConnectionLimits(total=5))
    assert [adm.admit("a") for _ in range(6)] == [None] * 5 + [GLOBAL_LIMIT]


@pytest.mark.parametrize(
    "limits",
    [
        {"total": 0},
        {"total": 10, "reserved": 10},
        {"total": 10, "reserved": -1},
        {"total": 10, "reserved_per_client": 0},
    ],
)
def test_impossible_limits_are_refused(limits: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ConnectionLimits(**limits)


def test_client_address_is_the_ip() -> None:
    assert client_address(("10.1.2.3", 4567)) == "10.1.2.3"
    assert client_address(("::ffff:10.1.2.3", 4567, 0, 0)) == "10.1.2.3"
    assert client_address(("2001:db8::1", 4567, 0, 0)) == "2001:db8::1"


def test_quiet_log_logs_once_per_interval_and_counts_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    quiet = QuietLog(
        logging.getLogger("hms_cache_proxy.test.quiet"), interval=10, clock=lambda: now[0]
    )
    caplog.set_level(logging.WARNING, logger="hms_cache_proxy.test.quiet")
    assert quiet.log("limit", "refusing %s", "a")
    assert not any(quiet.log("limit", "refusing %s", "b") for _ in range(499))
    assert quiet.log("other", "other kind")  # kinds are limited separately
    now[0] += 10
    assert quiet.log("limit", "refusing %s", "c")
    assert [r.getMessage() for r in caplog.records] == [
        "refusing a",
        "other kind",
        "refusing c (and 499 more like it since the last such line)",
    ]
