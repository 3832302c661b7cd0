"""A command whose reader goes away (`status | head -5`) stops quietly with exit status 141,
and its clean-up still runs; checked on real processes writing into a pipe nobody reads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from hms_cache_proxy.closed_stdout import EXIT_STDOUT_CLOSED
from tests.support.server import ROOT

# The shape of soak's and bench's loops: progress lines, an `except Exception` that reports a
# failed step and carries on, and a `finally` that stops what the run started.
LOOP = textwrap.dedent(
    """
    import sys
    from hms_cache_proxy.closed_stdout import quiet_on_closed_stdout

    @quiet_on_closed_stdout
    def main() -> int:
        try:
            for i in range(1_000_000):
                try:
                    print(f"window {i}", flush=True)
                except Exception as exc:
                    print(f"step failed: {exc!r}", file=sys.stderr)
            return 0
        finally:
            print("servers stopped", file=sys.stderr)

    sys.exit(main())
    """
)


def _run_into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run ``args`` with stdout a pipe whose reading end is already closed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        return subprocess.run(
            args, stdout=write_end, stderr=subprocess.PIPE, env=env, cwd=ROOT, timeout=60
        )
    finally:
        os.close(write_end)


def test_a_loop_stops_at_the_closed_pipe_and_cleans_up() -> None:
    done = _run_into_closed_pipe([sys.executable, "-c", LOOP])
    assert done.returncode == EXIT_STDOUT_CLOSED == 141
    assert done.stderr.decode() == "servers stopped\n"  # no traceback, no "step failed"


def test_help_into_a_closed_pipe_is_quiet() -> None:
    for command in (
        ["hms_cache_proxy", "--help"],
        ["hms_cache_proxy", "soak", "--help"],
        ["hms_cache_proxy", "pipeline", "verify", "--help"],
        ["hms_cache_proxy.pipeline", "etl", "--help"],  # what spark-submit runs
    ):
        done = _run_into_closed_pipe([sys.executable, "-m", *command])
        assert done.returncode == EXIT_STDOUT_CLOSED, command
        assert done.stderr == b"", command


def test_output_that_was_read_is_unchanged() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hms_cache_proxy", "bench", "--list"],
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert b"get_table" in done.stdout and done.stderr == b""
