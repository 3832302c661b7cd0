"""``hms-cache-proxy check``: its help names every option, and bad options are refused with a
clear message and exit status 2 before anything is started."""

from __future__ import annotations

import pytest

from hms_cache_proxy.check.faults import KINDS, parse_kinds
from hms_cache_proxy.cli import build_parser, main


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["check", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--instances",
        "--clients",
        "--operations",
        "--duration",
        "--seed",
        "--faults",
        "--fault-interval",
        "--stall-seconds",
        "--database-url",
        "--consistency",
        "--eventual-bound",
        "--checkpoint-every",
        "--report",
        "--workdir",
    ):
        assert option in text, option
    for kind in KINDS:
        assert kind in text, kind


def test_fault_lists_are_parsed_and_unknown_kinds_refused() -> None:
    assert parse_kinds("all") == list(KINDS)
    assert parse_kinds("none") == [] and parse_kinds("") == []
    assert parse_kinds("stall, kill,stall") == ["stall", "kill"]
    with pytest.raises(ValueError, match=r"unknown kind\(s\) \['bogus'\]"):
        parse_kinds("kill,bogus")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--faults", "bogus"], "unknown kind(s) ['bogus']"),
        (["--instances", "0"], "--instances and --clients must be at least 1"),
        (["--database-url", "sqlite:///x.db"], "must be a PostgreSQL URL"),
        (["--operations", "0"], "--operations must be at least 1"),
    ],
)
def test_bad_options_exit_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", *argv]) == 2
    assert message in capsys.readouterr().err
