"""The benchmark's outputs: a JSON file, a Markdown table, a PNG chart, and docs/benchmarks.md.

Ratios are computed pair by pair within one run: for each (case, clients, client mode) row,
ours against the stock server's figure from the same run, never against remembered numbers.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hms_cache_proxy.bench.cases import BYTES, DECODED
from hms_cache_proxy.bench.runner import Result
from hms_cache_proxy.bench.targets import CACHE, DB, FLOOR, LABELS, ORDER, SHORT, STOCK

RATIO_PAIRS = ((DB, STOCK), (CACHE, STOCK), (DB, FLOOR), (CACHE, FLOOR))

HEADLINES = (
    (("get_table", 1, DECODED), "cache ≥ 3× stock calls/s and ≥ 70% of the floor; db path ≥ stock"),
    (("get_table", 8, DECODED), "cache ≥ 3× stock aggregate calls/s"),
    (("get_partitions_1000", 1, BYTES), "cache ≥ 10× faster than stock"),
    (("get_partitions_1000", 1, DECODED), "(the same, with the client's decoding included)"),
    (("get_partitions_by_filter_1_of_10000", 1, DECODED), "p50 ≤ 1 ms"),
    (("add_partitions_1000", 1, DECODED), "≥ 10× faster than stock"),
    (("txn_open_commit", 1, DECODED), "≥ 1.5× stock calls/s"),
    (("txn_open_commit", 8, DECODED), "≥ 1.5× stock calls/s"),
    (("acid_read_query", 1, DECODED), "≥ 2× stock's equivalent sequence"),
    (("acid_insert", 1, DECODED), "≥ stock's equivalent sequence"),
    (("get_valid_write_ids", 1, DECODED), "p50 ≤ 0.5 ms (8 clients: ≥ 2,000 calls/s)"),
)
"""The rows docs/design.md's performance targets name, with the target each is held against."""

MODE_TEXT = {
    DECODED: "decoded",
    BYTES: "bytes",
}

LEGEND = """\
- **decoded**: a thriftpy2 client (cython binary protocol, buffered socket) that builds every
  reply object, as a real Python client does. For large replies this is mostly the client's own
  decoding time (about 300 ms for 10,000 partitions even from canned bytes).
- **bytes**: a client that sends a pre-encoded request and reads the reply's bytes off the
  socket without building objects (a small C walker over the binary structure finds where the
  reply ends; about 1 ms per MB). This is the figure that shows the server.
- Cells: calls/s, then p50 / p99 latency in ms. With 8 clients calls/s is the aggregate of 8
  client processes over the same window and latencies are per call.
- Ratios: ours ÷ stock calls/s (above 1: ours is faster), then stock p50 ÷ ours p50, both from
  this run. n/a: the server cannot run the case; —: not measured for that server.
- Server and clients are separate processes, but they share the machine's cores, so with 8
  clients the clients' own CPU use limits what the server can show."""


@dataclass
class Report:
    started: str
    command: str
    machine: dict[str, Any]
    settings: dict[str, Any]
    targets: list[dict[str, Any]] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)
    finished: str = ""
    run_seconds: float = 0.0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Report:
        """A report read back from its JSON (to render it again)."""
        report = cls(
            started=d["started"],
            command=d["command"],
            machine=d["machine"],
            settings=d["settings"],
            targets=d["targets"],
            results=[Result(**r) for r in d["results"]],
            cache=d.get("cache", {}),
            finished=d.get("finished", ""),
            run_seconds=d.get("run_seconds", 0.0),
        )
        return report

    # -- derived -----------------------------------------------------------------------------

    def target_keys(self) -> list[str]:
        present = {t["key"] for t in self.targets}
        keys = [k for k in ORDER if k in present]
        return keys + [t["key"] for t in self.targets if t["key"] not in ORDER]

    def label(self, key: str) -> str:
        for t in self.targets:
            if t["key"] == key:
                return str(t.get("label", key))
        return LABELS.get(key, key)

    def rows(self) -> list[tuple[str, int, str]]:
        seen: list[tuple[str, int, str]] = []
        for r in self.results:
            if r.key not in seen:
                seen.append(r.key)
        return seen

    def cell(self, key: tuple[str, int, str], target: str) -> Result | None:
        for r in self.results:
            if r.key == key and r.target == target:
                return r
        return None

    def ratios(self) -> list[dict[str, Any]]:
        out = []
        for key in self.rows():
            for ours, other in RATIO_PAIRS:
                a, b = self.cell(key, ours), self.cell(key, other)
                if not (a and b and a.status == "ok" and b.status == "ok"):
                    continue
                if not (a.calls_per_s and b.calls_per_s and a.p50_ms and b.p50_ms):
                    continue
                out.append(
                    {
                        "case": key[0],
                        "clients": key[1],
                        "mode": key[2],
                        "ours": ours,
                        "vs": other,
                        "calls_per_s_ratio": a.calls_per_s / b.calls_per_s,
                        "p50_ratio": b.p50_ms / a.p50_ms,
                    }
                )
        return out

    def ratio(self, key: tuple[str, int, str], ours: str, other: str) -> dict[str, Any] | None:
        for r in self.ratios():
            if (r["case"], r["clients"], r["mode"]) == key and (r["ours"], r["vs"]) == (
                ours,
                other,
            ):
                return r
        return None

    # -- outputs -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "finished": self.finished,
            "run_seconds": round(self.run_seconds, 1),
            "command": self.command,
            "machine": self.machine,
            "settings": self.settings,
            "targets": self.targets,
            "results": [asdict(r) for r in self.results],
            "ratios": self.ratios(),
            "cache": self.cache,
            "legend": LEGEND,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def markdown(self) -> str:
        keys = self.target_keys()
        measured = {r.target for r in self.results if r.status == "ok"}
        pairs = [(a, b) for a, b in RATIO_PAIRS if a in measured and b in measured]
        head = ["case", "clients", "client"] + [SHORT.get(k, k) for k in keys]
        head += [f"{SHORT[a]} ÷ {SHORT[b]}" for a, b in pairs]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (len(head) - 3)]
        for key in self.rows():
            cells = [key[0], str(key[1]), MODE_TEXT.get(key[2], key[2])]
            for k in keys:
                cells.append(_cell_text(self.cell(key, k)))
            for a, b in pairs:
                r = self.ratio(key, a, b)
                cells.append(f"{r['calls_per_s_ratio']:.2f}× / {r['p50_ratio']:.2f}×" if r else "—")
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def headline_markdown(self) -> str:
        keys = [k for k in ORDER if k in self.target_keys()]
        head = (
            ["case", "clients", "client"] + [SHORT[k] for k in keys] + ["target (docs/design.md)"]
        )
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * len(keys) + "---|"]
        for key, goal in HEADLINES:
            if key not in self.rows():
                continue
            cells = [key[0], str(key[1]), MODE_TEXT[key[2]]]
            cells += [_cell_text(self.cell(key, k)) for k in keys]
            lines.append("| " + " | ".join(cells + [goal]) + " |")
        return "\n".join(lines) if len(lines) > 2 else ""

    def targets_markdown(self) -> str:
        lines = []
        for t in self.targets:
            state = t["status"] if not t.get("reason") else f"{t['status']}: {t['reason']}"
            lines.append(f"- **{SHORT.get(t['key'], t['key'])}**: {t['label']} ({state})")
        return "\n".join(lines)

    def cache_markdown(self) -> str:
        c = self.cache
        if not c or c.get("status") == "n/a":
            reason = c.get("reason", "the cache target was not run") if c else "not run"
            return (
                "Memory per cached partition, prewarm partitions/s and propagation lag between "
                f"two instances: n/a ({reason})."
            )
        lines = []
        mem = c.get("memory", {})
        if "rss_bytes_per_partition" in mem:
            lines.append(
                f"- memory per cached partition (resident, cache on − cache off, over "
                f"{mem['partitions']:,} partitions): {mem['rss_bytes_per_partition'] / 1024:.2f} KB"
            )
        if "accounted_bytes_per_partition" in mem:
            lines.append(
                "- memory per cached partition (the cache's own accounting): "
                f"{mem['accounted_bytes_per_partition'] / 1024:.2f} KB"
            )
        pre = mem.get("prewarm", {})
        if pre.get("partitions_per_s"):
            lines.append(
                f"- prewarm: {pre['partitions']:,.0f} partitions, "
                f"{pre['partitions_per_s']:,.0f} partitions/s ({pre['note']}; "
                f"{pre['seconds_from_start']} s from process start to done)"
            )
        elif pre:
            lines.append(f"- prewarm: n/a ({pre.get('reason', pre)})")
        strong = c.get("strong", {})
        if "p50_ratio" in strong:
            lines.append(
                f"- strong mode: get_table p50 {strong['strong']['p50_ms']:.3f} ms against "
                f"{strong['eventual']['p50_ms']:.3f} ms in eventual mode "
                f"({strong['p50_ratio']:.2f}×; 1 client, servers started for this)"
            )
        lag = c.get("propagation", {})
        if "p50_ms" in lag:
            lines.append(
                f"- propagation lag A → B ({lag['writes']} alter_table writes, B polled with "
                f"get_table; includes one get_table round trip): p50 {lag['p50_ms']:.1f} ms, "
                f"p99 {lag['p99_ms']:.1f} ms, max {lag['max_ms']:.1f} ms, missed {lag['missed']}"
            )
        elif lag:
            lines.append(f"- propagation lag: {lag.get('status')} ({lag.get('reason')})")
        if "error" in c:
            lines.append(f"- error: {c['error']}")
        return "\n".join(lines)

    def full_markdown(self, chart: str | None = None) -> str:
        parts = [
            f"Run {self.started} ({self.run_seconds / 60:.1f} min).",
            "",
            "```",
            self.command,
            "```",
            "",
            "Machine: " + describe_machine(self.machine),
            "",
        ]
        if self.settings.get("note"):
            parts += [f"Note: {self.settings['note']}", ""]
        parts += [
            "Servers:",
            self.targets_markdown(),
            "",
        ]
        headline = self.headline_markdown()
        if headline:
            parts += ["Headline rows (docs/design.md's performance targets):", "", headline, ""]
        parts += [
            "All cases:",
            "",
            self.markdown(),
            "",
            LEGEND,
            "",
            "Cache figures:",
            "",
            self.cache_markdown(),
        ]
        if chart:
            parts += ["", f"![calls/s per case and server]({chart})"]
        return "\n".join(parts) + "\n"


def _cell_text(r: Result | None) -> str:
    if r is None:
        return "—"
    if r.status == "n/a":
        return "n/a"
    if r.status != "ok" or r.calls_per_s is None:
        return "error"
    return f"{_rate(r.calls_per_s)}/s · {_ms(r.p50_ms)} / {_ms(r.p99_ms)}"


def _rate(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.2f}"


def _ms(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:.2f}" if v < 100 else f"{v:,.0f}"


# -- chart ---------------------------------------------------------------------------------------


def write_chart(report: Report, path: Path) -> Path | None:
    """A horizontal bar chart of calls/s (log scale), one group per row, one bar per server.
    Returns None when matplotlib is missing (pip install 'hms-cache-proxy[bench]')."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = report.rows()
    keys = [
        k
        for k in report.target_keys()
        if any(r.target == k and r.status == "ok" and r.calls_per_s for r in report.results)
    ]
    if not keys:
        return None
    colors = {DB: "#1f77b4", CACHE: "#2ca02c", STOCK: "#d62728", FLOOR: "#7f7f7f"}
    height = 0.8 / max(1, len(keys))
    fig, ax = plt.subplots(figsize=(11, 1.5 + 0.42 * len(rows) * max(1, len(keys)) / 2))
    for j, k in enumerate(keys):
        ys, xs = [], []
        for i, key in enumerate(rows):
            r = report.cell(key, k)
            if r is not None and r.status == "ok" and r.calls_per_s:
                ys.append(i + (j - (len(keys) - 1) / 2) * height)
                xs.append(r.calls_per_s)
        ax.barh(ys, xs, height=height, label=report.label(k), color=colors.get(k))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{c} ×{n} ({MODE_TEXT.get(m, m)})" for c, n, m in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("calls/s (log scale; more is better)")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"hms-cache-proxy bench, {report.started}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# -- machine -------------------------------------------------------------------------------------


def machine(postgres_version: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gb": _memory_gb(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": _java_version(),
        "postgres": postgres_version,
        "load_average_at_start": _load_average(),
    }
    for pkg in ("thriftpy2", "pyspark", "sqlalchemy", "psycopg2"):
        try:
            from importlib.metadata import version

            dist = {"psycopg2": "psycopg2-binary", "sqlalchemy": "SQLAlchemy"}.get(pkg, pkg)
            info[pkg] = version(dist)
        except Exception:
            info[pkg] = None
    return info


def describe_machine(m: dict[str, Any]) -> str:
    parts = [
        f"{m.get('cpus')} cores ({m.get('cpu_model') or 'unknown CPU'})",
        f"{m.get('memory_gb')} GB memory",
        str(m.get("os")),
        f"Python {m.get('python')}",
        f"Java {m.get('java') or 'none'}",
    ]
    if m.get("postgres"):
        parts.append(str(m["postgres"]))
    parts.append(f"thriftpy2 {m.get('thriftpy2')}, PySpark {m.get('pyspark')}")
    text = "; ".join(parts) + ". Clients and servers share these cores."
    load = m.get("load_average_at_start")
    if load:
        text += f" Load average when the run started: {' / '.join(str(x) for x in load)}"
        text += " (1 / 5 / 15 min)"
        end = m.get("load_average_at_end")
        text += f"; when it ended: {' / '.join(str(x) for x in end)}." if end else "."
    return text


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _java_version() -> str | None:
    java = shutil.which("java")
    if not java:
        return None
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "([^"]+)"', out.stderr)
    return m.group(1) if m else out.stderr.strip().splitlines()[0] if out.stderr else None


# -- files ---------------------------------------------------------------------------------------


def write_outputs(report: Report, output_dir: Path) -> dict[str, Path]:
    """bench-<time>.json, latest.json, latest.md and latest.png in ``output_dir``."""
    output_dir.mkdir(parents=True, exist_ok=True)
    stamp = report.started.replace(":", "").replace("-", "")
    paths = {"json": output_dir / f"bench-{stamp}.json"}
    paths["json"].write_text(report.to_json())
    (output_dir / "latest.json").write_text(report.to_json())
    png = write_chart(report, output_dir / "latest.png")
    if png is not None:
        paths["png"] = png
    md = output_dir / "latest.md"
    md.write_text(report.full_markdown("latest.png" if png else None))
    paths["md"] = md
    return paths


DOCS_HEAD = """\
# Benchmarks

`hms-cache-proxy bench` runs hmsbench-style cases against, in one run and side by side: this
service with the cache, this service with the cache off (every call takes the database path),
the stock Java Hive Metastore 2.3.10 that ships in PySpark's jars, and a floor. The targets
these figures are held against are in docs/design.md ("Performance targets").

This page is written by the command (`--write-docs docs`): regenerate it whenever a change moves
the figures. The raw figures of the run below are in `benchmarks.json`, the chart in
`benchmarks.png`.

## How it runs

- **Servers**, one after another so that no two compete for the cores, each a process of its
  own: `hms-cache-proxy serve` with `cache_enabled: false` ("db path"); `serve` with the cache
  on ("cache", measured once prewarm has finished); the stock metastore ("stock", schema
  created by DataNucleus, with Hive 2.3's transaction tables added from its own TxnDbUtil DDL;
  calls Hive 2.3 does not have are "n/a"); and the floor ("floor": a thriftpy2 threaded server,
  cython binary protocol, whose handler returns a prebuilt copy of the very table get_table
  reads). db path, cache and stock each get a fresh database of their own on the same
  PostgreSQL and make their cases' data through themselves, so each starts from the same
  state: that PostgreSQL runs without autovacuum, and a server run on the database another
  had run on would find its dead rows, its notification log and its planner statistics
  (`--database-url` alone puts both of our servers on the one database it names, the cache
  server after the db path).
- **Clients**: each a process of its own, 1, or 8 started together at a barrier. Every case
  first makes its data (untimed), warms up (at least one call, 1 s), then is timed for 3 s (at
  least a few calls, at most 60 s).
- **Transaction cases**: the calls one Hive query on a transactional table makes, timed as one
  sequence: `acid_read_query` (open_txns, get_open_txns, get_valid_write_ids, lock SHARED_READ,
  get_table_req and get_partitions_by_names_req of 10 partitions with the ValidWriteIdList,
  commit_txn) and `acid_insert` (open_txns, allocate_table_write_ids, lock SHARED_WRITE,
  alter_partitions_req with the write id, commit_txn). The stock server runs Hive 2.3's
  equivalent: the same sequence without the write-id calls (plain get_table,
  get_partitions_by_names, alter_partitions) on a table that is not transactional. The
  `*_history` cases repeat the transaction cases (1 client) with 100,000 finished transactions
  (TXNS, COMPLETED_TXN_COMPONENTS, TXN_TO_WRITE_ID rows, with min-history off also WRITE_SET
  rows; for stock 2.3 its COMPLETED_TXN_COMPONENTS) put straight into the server's database
  first and taken out after; our servers then answer get_open_txns for 6 s, so that their
  settled floor passes them as it would have had they served those txns (bench/txn_history.py).
  With these cases selected our servers run no housekeeping rounds: one (every 60 s by default)
  removes the history's TXNS rows, about 4 s of database work at 100,000, and would time that
  in one case and leave the rest without history (`--setting
  txn_housekeeping_interval_seconds=60` brings them back; the command then says when one came).
- **Cache figures**: memory per cached partition (resident memory of a freshly prewarmed cache
  server less a cache-off one, over the partitions in the database, and the cache's own
  accounting); prewarm partitions/s; get_table in strong against eventual mode; propagation lag
  (alter_table through instance A, B polled with get_table until it shows the change).

## Running it

- `hms-cache-proxy bench`: everything, about 15 minutes here. It starts a throwaway PostgreSQL
  (server binaries needed), and the stock server needs Java (a JDK) and PySpark
  (`pip install 'hms-cache-proxy[spark,bench]'`); without them that column says why.
- `--quick`: a smoke run of a minute or two. `--no-stock`, `--targets db cache floor`,
  `--cases 'get_partitions*'`, `--clients 1`: parts of it. `--list`: the cases.
- `--uri thrift://HOST:PORT`: the cases against any running metastore.
- `--setting KEY=VALUE` sets both of this service's servers (`--cache-setting` the cache server
  only), e.g. the min-history switch's A/B: `hms-cache-proxy bench --targets db cache stock
  --cases txn_open_commit get_valid_write_ids acid_insert acid_read_query --setting
  txn_use_min_history_level=false` against the same command without it (docs/compatibility.md,
  "Transactions: the min-history switches").
- `--write-docs docs` rewrites this page; `--render FILE.json --write-docs docs` renders it again
  from a saved report without running anything.
- `python -m hms_cache_proxy.bench.passthrough`: what upstream mode adds to a call (get_database
  straight to an upstream and through a proxy in front of it, p50/p99 of each); its figures are
  in docs/operations.md, "Upstream mode".
- `scripts/measure_cpu_per_call.py`: CPU time per operation of one server and of its
  PostgreSQL for a case, with PostgreSQL's wait events and statements ("Transaction writes at
  8 clients", below): what to compare on a loaded machine.
- `python -m hms_cache_proxy.bench.fanout --sidecars 50,100`: sidecars on one central
  instance, the central's CPU per idle sidecar and two lags per write and sidecar, each in a
  phase of its own: the learn lag (from the write's reply to the sidecar's poller applying its
  event, from the apply times in the sidecar's /readyz, nothing reading the sidecars
  meanwhile) and the reader-visible lag (to the first read through the sidecar that shows it,
  every sidecar read every 5 ms); with the load average and the CPU per write of the central,
  of a sidecar and of the measurer; `--measure learn` runs the first alone. Its figures are in
  docs/operations.md, "Upstream mode".
- `hms-cache-proxy fanout`: many instances on one PostgreSQL, their connections, idle statements
  and write-to-all lag ("Fan-out", below).

"""


def write_docs(report: Report, docs_dir: Path) -> Path:
    docs_dir.mkdir(parents=True, exist_ok=True)
    png = write_chart(report, docs_dir / "benchmarks.png")
    (docs_dir / "benchmarks.json").write_text(report.to_json() + "\n")
    path = docs_dir / "benchmarks.md"
    body = report.full_markdown("benchmarks.png" if png else None)
    path.write_text(DOCS_HEAD + "## Latest run\n\n" + body + _kept_sections(path))
    return path


KEPT_SECTION = "\n## Fan-out"
"""The page's sections from here on are not this command's (``hms-cache-proxy fanout``'s
figures): a rewrite keeps them."""


def _kept_sections(path: Path) -> str:
    try:
        text = path.read_text()
    except OSError:
        return ""
    at = text.find(KEPT_SECTION)
    return "" if at < 0 else "\n" + text[at:].lstrip("\n")
