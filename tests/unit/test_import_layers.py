"""No import circles in hms_cache_proxy: between modules, nor between the parts of any package.

The layers read top-down (cli -> app -> server -> handler -> store -> observability/config, and
inside store/: db, then the pure algorithms, then sql, events, txn, cache, cached). A circle
means some module reaches back up, usually hidden in a function-local import, so the walk reads
every import statement of every module with ``ast``, function bodies included.

An edge is what a statement names: ``import a.b`` and ``from a import b`` lead to the module
``a.b`` when it is one, else to ``a``. The parent packages Python initialises on the way are
not edges: a package's __init__ re-exporting its own modules is not a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "hms_cache_proxy"

Graph = Mapping[str, Mapping[str, int]]
"""Module -> {imported module: line of the first import of it}."""


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under ``package_dir``."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _longest_module(name: str, files: Mapping[str, Path]) -> str | None:
    while name and name not in files:
        name = name.rpartition(".")[0]
    return name or None


def _imports(
    tree: ast.AST, module: str, is_package: bool, files: Mapping[str, Path]
) -> Iterator[tuple[str | None, int]]:
    """(imported module of this package, line) for every import statement, nested ones too."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _longest_module(alias.name, files), node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                name = f"{base}.{alias.name}"
                yield (name if name in files else _longest_module(base, files)), node.lineno


def import_graph(package_dir: Path) -> dict[str, dict[str, int]]:
    """Module -> {module of the package it imports: line of the first such import}."""
    files = module_files(package_dir)
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: dict[str, int] = {}
        for target, line in _imports(tree, module, path.name == "__init__.py", files):
            if target is not None and target != module:
                edges[target] = min(edges.get(target, line), line)
        graph[module] = edges
    return graph


def find_circle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One circle of the graph as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        state[start] = 1
        stack = [iter(sorted(graph.get(start, ())))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                state[path.pop()] = 2
                continue
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def collapse(graph: Graph, package: str) -> dict[str, set[str]]:
    """The graph between the direct parts (subpackages and modules) of ``package``."""
    prefix = package + "."

    def part(module: str) -> str | None:
        if not module.startswith(prefix):
            return None
        return prefix + module[len(prefix) :].split(".")[0]

    out: dict[str, set[str]] = {}
    for module, edges in graph.items():
        a = part(module)
        if a is None:
            continue
        for target in edges:
            b = part(target)
            if b is not None and b != a:
                out.setdefault(a, set()).add(b)
    return out


def describe(circle: list[str], graph: Graph) -> str:
    steps = []
    for a, b in zip(circle, circle[1:], strict=False):
        line = graph.get(a, {}).get(b)
        steps.append(f"{a} (line {line})" if line else a)
    return " -> ".join(steps + [circle[-1]])


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    return import_graph(PACKAGE_DIR)


def test_no_module_circle(graph: dict[str, dict[str, int]]) -> None:
    circle = find_circle(graph)
    assert circle is None, f"import circle between modules: {describe(circle, graph)}"


def test_no_circle_between_the_parts_of_a_package(graph: dict[str, dict[str, int]]) -> None:
    packages = sorted(
        m for m, path in module_files(PACKAGE_DIR).items() if path.name == "__init__.py"
    )
    assert "hms_cache_proxy.store" in packages
    for package in packages:
        circle = find_circle(collapse(graph, package))
        assert circle is None, f"import circle between the parts of {package}: " + " -> ".join(
            circle
        )


def test_store_foundation_imports_nothing_above_it(graph: dict[str, dict[str, int]]) -> None:
    """store/db is the bottom of store/: it may use config, failpoints and the like, no store."""
    for module, edges in graph.items():
        if module.startswith("hms_cache_proxy.store.db"):
            above = [t for t in edges if t.startswith("hms_cache_proxy.store.") and ".db" not in t]
            assert not above, f"{module} imports {above}"


STORE_LEVELS = (
    {"db"},
    {
        "partnames",
        "patterns",
        "partition_filter",
        "table_filter",
        "txn_snapshots",
        "write_id_equivalence",
        "cron",
        "rules",
    },
    {"events"},
    {"txn", "colstats"},
    {"sql"},
    {"cache"},
    {"cached"},
)
"""The parts of store/, bottom up: the database foundation, pure algorithms, the event log,
transactions (and the statistics rules, which write their flag as event JSON does), the SQL
store, the cache (no I/O) and the caching store. Parts not listed are not checked here."""


def test_store_parts_import_only_downward(graph: dict[str, dict[str, int]]) -> None:
    level = {part: n for n, parts in enumerate(STORE_LEVELS) for part in parts}
    prefix = "hms_cache_proxy.store."
    upward = []
    for module, edges in graph.items():
        if not module.startswith(prefix):
            continue
        source = module[len(prefix) :].split(".")[0]
        for target, line in edges.items():
            if not target.startswith(prefix):
                continue
            part = target[len(prefix) :].split(".")[0]
            if source in level and part in level and level[part] > level[source]:
                upward.append(f"{module} (line {line}) imports {target}")
    assert not upward, "store/ imports running upward:\n" + "\n".join(upward)


HANDLER_STORE_IMPORTS = frozenset({"api", "events.databases", *STORE_LEVELS[1]})
"""What the handler may import of store/: the contract and the pure modules (events/databases.py
reads the databases an event names from its message, no I/O). A constant or rule the handler
borrowed from sql/ or txn/ belongs in store/rules.py; data it needs from a transaction comes
through the contract (alter_table's ``prepare`` gets ``exists``, not a connection)."""


def test_the_handler_imports_only_the_contract_and_pure_store_modules(
    graph: dict[str, dict[str, int]],
) -> None:
    prefix = "hms_cache_proxy.store."
    allowed = tuple(prefix + name for name in HANDLER_STORE_IMPORTS)
    reached = []
    for module, edges in graph.items():
        if not module.startswith("hms_cache_proxy.handler"):
            continue
        for target, line in edges.items():
            if target.startswith(prefix) and not any(
                target == a or target.startswith(a + ".") for a in allowed
            ):
                reached.append(f"{module} (line {line}) imports {target}")
    assert not reached, "the handler reaches past the store contract:\n" + "\n".join(reached)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_walk_finds_a_circle_hidden_in_a_function(tmp_path: Path) -> None:
    """The check itself: a function-local, relative import closing a circle is reported."""
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/low/__init__.py", "")
    _write(tmp_path, "pkg/low/base.py", "def f():\n    from ..high import top\n    return top\n")
    _write(tmp_path, "pkg/high/__init__.py", "")
    _write(tmp_path, "pkg/high/top.py", "from pkg.low.base import f\n")
    graph = import_graph(tmp_path / "pkg")
    assert graph["pkg.low.base"] == {"pkg.high.top": 2}
    circle = find_circle(graph)
    assert circle is not None
    assert describe(circle, graph) in (
        "pkg.high.top (line 1) -> pkg.low.base (line 2) -> pkg.high.top",
        "pkg.low.base (line 2) -> pkg.high.top (line 1) -> pkg.low.base",
    )
    assert find_circle(collapse(graph, "pkg")) in (
        ["pkg.high", "pkg.low", "pkg.high"],
        ["pkg.low", "pkg.high", "pkg.low"],
    )


def test_a_package_circle_between_modules_that_form_no_module_circle(tmp_path: Path) -> None:
    """a.x -> b.y and b.z -> a.w: no module circle, but the packages a and b import each other."""
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/a/__init__.py", "")
    _write(tmp_path, "pkg/a/x.py", "from pkg.b import y\n")
    _write(tmp_path, "pkg/a/w.py", "")
    _write(tmp_path, "pkg/b/__init__.py", "")
    _write(tmp_path, "pkg/b/y.py", "")
    _write(tmp_path, "pkg/b/z.py", "import pkg.a.w\n")
    graph = import_graph(tmp_path / "pkg")
    assert find_circle(graph) is None
    assert find_circle(collapse(graph, "pkg")) in (
        ["pkg.a", "pkg.b", "pkg.a"],
        ["pkg.b", "pkg.a", "pkg.b"],
    )
