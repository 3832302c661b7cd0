"""Bad option values stop every subcommand while its arguments are parsed: exit status 2 and a
message naming the option, before any server, database, Spark job or Thrift call is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from hms_cache_proxy import cli

VERIFY = ["pipeline", "verify", "--metastore-uri", "thrift://127.0.0.1:9", "--warehouse"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # the README's shorthand copied as it is: refused before the visibility check runs
        (VERIFY + ["{wh}", "--conf", "..."], "argument --conf: expected KEY=VALUE, got '...'"),
        (VERIFY + ["{wh}", "--conf", "=1"], "argument --conf: expected KEY=VALUE"),
        (VERIFY + ["{wh}", "--timeout", "0"], "argument --timeout: expected a number above 0"),
        (VERIFY + ["{wh}", "--report", "{tmp}/no/r.json"], "argument --report: the directory"),
        (VERIFY + ["{wh}", "--tls-ca", "{tmp}/none.pem"], "argument --tls-ca: no such file"),
        (
            ["pipeline", "etl", "--metastore-uri", "thrift://h:1", "--warehouse", "{wh}"]
            + ["--days", "2", "--conf", "spark.driver.memory"],
            "argument --conf: expected KEY=VALUE",
        ),
        (
            ["pipeline", "backfill", "--metastore-uri", "thrift://h:1", "--warehouse", "{wh}"]
            + ["--days", "2", "--conf", "x"],
            "argument --conf: expected KEY=VALUE",
        ),
        (["bench", "--uri", "127.0.0.1:9083"], "argument --uri: expected thrift://HOST:PORT"),
        (["bench", "--duration", "-1"], "argument --duration: expected a number above 0"),
        (["bench", "--warmup", "x"], "argument --warmup: expected a number, got 'x'"),
        (["bench", "--lag-writes", "0"], "argument --lag-writes: expected a whole number"),
        (["bench", "--render", "{tmp}/none.json"], "argument --render: no such file"),
        (["soak", "--output", "{tmp}/no/s.json"], "argument --output: the directory"),
        (["check", "--eventual-bound", "-1"], "argument --eventual-bound: expected a number above"),
        (["check", "--checkpoint-every", "-5"], "argument --checkpoint-every: expected a number"),
        (["fanout", "--instances", "0"], "argument --instances: expected a whole number"),
        (["fanout", "--idle-seconds", "0"], "argument --idle-seconds: expected a number above 0"),
        (["fanout", "--output", "{tmp}/no/f.json"], "argument --output: the directory"),
        (["status", "--timeout", "0"], "argument --timeout: expected a number above 0"),
        (["status", "--interval", "-2"], "argument --interval: expected a number of at least 0"),
    ],
)
def test_bad_values_are_refused_while_parsing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.format(wh=tmp_path / "wh", tmp=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as stopped:
        cli.main(args)
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert message in err
    assert out == ""  # nothing ran, nothing printed


def test_check_refuses_a_report_it_could_not_write_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["check", "--report", str(tmp_path / "no" / "c.json")]) == 2
    assert f"check --report: the directory '{tmp_path / 'no'}' does not exist" in (
        capsys.readouterr().err
    )


def test_good_values_pass(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    args = cli.build_parser().parse_args(
        VERIFY
        + [str(tmp_path), "--timeout", "2.5", "--report", str(tmp_path / "r.json")]
        + ["--tls-ca", str(ca), "--conf", "a.b=c=d", "--conf", "e="]
    )
    assert args.conf == ["a.b=c=d", "e="] and args.timeout == 2.5
    args = cli.build_parser().parse_args(["bench", "--uri", "thrift://[::1]:9083"])
    assert args.uri == "thrift://[::1]:9083"


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["bench", "--output", "{plain}/results"], "--output"),
        (["bench", "--write-docs", "{plain}"], "--write-docs"),
        (["soak", "--write-docs", "{plain}/docs"], "--write-docs"),
        (["check", "--workdir", "{plain}/logs"], "--workdir"),
    ],
)
def test_a_directory_the_run_writes_into_at_the_end_is_checked_before_it(
    argv: list[str], option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.write_text("a file, not a directory\n")
    # parsing only: were the check missing, nothing would start (cli.main would run the bench)
    with pytest.raises(SystemExit) as stopped:
        cli.build_parser().parse_args([a.format(plain=plain) for a in argv])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: " in err and "is not a directory" in err


def test_a_directory_still_to_be_made_passes(tmp_path: Path) -> None:
    out = tmp_path / "new" / "results"
    args = cli.build_parser().parse_args(["bench", "--output", str(out)])
    assert args.output == str(out) and not out.exists()  # made by the run, not by parsing
