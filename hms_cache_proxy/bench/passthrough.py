"""What upstream mode adds to a call: ``python -m hms_cache_proxy.bench.passthrough``.

Starts two processes on this machine: an upstream (``serve`` on a SQLite file, cache on) and
a proxy in front of it (``serve --upstream``). One client process then times a cheap call
(get_database, pre-encoded, reply walked without building objects: ``rawclient``) straight to
the upstream and through the proxy, in alternating rounds so that drift of the machine falls
on both alike, and prints p50/p99 of each and the p50 difference. The proxy's cache is off
(every call passes through) unless ``--cache``: then its calls are cache hits, to set against
the upstream's own cache hits.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hms_cache_proxy.bench.cases import connect
from hms_cache_proxy.bench.rawclient import RawClient, encode_call
from hms_cache_proxy.idl import hms

_ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(workdir: Path, port: int, *args: str, cache: bool = True) -> subprocess.Popen[bytes]:
    env = dict(os.environ, HMS_CACHE_PROXY_METRICS_PORT="off", HMS_CACHE_PROXY_LOG_LEVEL="WARNING")
    env["HMS_CACHE_PROXY_UPSTREAM_CACHE"] = "true" if cache else "false"
    # this very copy of the package, installed or not
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "hms_cache_proxy", "serve", "--host", "127.0.0.1"]
    log = open(workdir / f"serve-{port}.log", "wb")  # noqa: SIM115 - the child holds it
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), *args],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((workdir / f"serve-{port}.log").read_text())
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"serve on port {port} did not listen within 60 s")


def _time(client: RawClient, request: bytes, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        client.call(request)
        out.append(time.perf_counter() - started)
    return out


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20, help="alternating rounds (default 20)")
    parser.add_argument("--calls", type=int, default=500, help="calls per round (default 500)")
    parser.add_argument(
        "--cache", action="store_true", help="the proxy's cache on: its calls are cache hits"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hms-passthrough-") as tmp:
        work = Path(tmp)
        up_port, proxy_port = _free_port(), _free_port()
        upstream = _serve(work, up_port, "--database-url", f"sqlite:///{work / 'hms.db'}")
        try:
            proxy = _serve(
                work, proxy_port, "--upstream", f"thrift://127.0.0.1:{up_port}", cache=args.cache
            )
            try:
                request = encode_call("get_database", {"name": "default"})
                direct, through = (
                    RawClient("127.0.0.1", up_port),
                    RawClient("127.0.0.1", proxy_port),
                )
                _time(direct, request, 200), _time(through, request, 200)  # warm up
                if args.cache:  # an event in the log (at event id 0 the proxy cannot tell
                    # a log from none), then its poller follows it: its reads are hits
                    setup = connect("127.0.0.1", up_port, timeout_s=60)
                    setup.create_database(hms.Database(name="bench_passthrough"))
                    setup.close()
                    time.sleep(2)
                    _time(through, request, 200)
                d: list[float] = []
                p: list[float] = []
                for _ in range(args.rounds):
                    d += _time(direct, request, args.calls)
                    p += _time(through, request, args.calls)
            finally:
                proxy.terminate()
                proxy.wait(30)
        finally:
            upstream.terminate()
            upstream.wait(30)
    print(f"get_database, {len(d)} calls each, 1 client, walker {direct.kind}")
    print(f"  direct to the upstream: p50 {_pct(d, 0.5):.3f} ms  p99 {_pct(d, 0.99):.3f} ms")
    through_label = "through the proxy:     " if not args.cache else "proxy's cache hits:    "
    print(f"  {through_label} p50 {_pct(p, 0.5):.3f} ms  p99 {_pct(p, 0.99):.3f} ms")
    what = "pass-through overhead:" if not args.cache else "cache hits vs direct: "
    print(
        f"  {what}  p50 {_pct(p, 0.5) - _pct(d, 0.5):+.3f} ms "
        f"(mean {1000 * (statistics.fmean(p) - statistics.fmean(d)):+.3f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
