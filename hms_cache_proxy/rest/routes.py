"""The REST paths this catalog serves, matched to operation names; ``ENDPOINTS`` is what
/v1/config advertises (exactly the routes below)."""

from __future__ import annotations

import re
from urllib.parse import unquote

from hms_cache_proxy.rest.errors import RestError

_NS = r"(?P<ns>[^/]+)"
_T = r"(?P<table>[^/]+)"
ROUTES: tuple[tuple[str, str, str], ...] = (
    # (method, spec path, operation)
    ("GET", "/v1/{prefix}/namespaces", "list_namespaces"),
    ("POST", "/v1/{prefix}/namespaces", "create_namespace"),
    ("GET", "/v1/{prefix}/namespaces/{namespace}", "load_namespace"),
    ("HEAD", "/v1/{prefix}/namespaces/{namespace}", "namespace_exists"),
    ("DELETE", "/v1/{prefix}/namespaces/{namespace}", "drop_namespace"),
    ("POST", "/v1/{prefix}/namespaces/{namespace}/properties", "update_namespace"),
    ("GET", "/v1/{prefix}/namespaces/{namespace}/tables", "list_tables"),
    ("POST", "/v1/{prefix}/namespaces/{namespace}/tables", "create_table"),
    ("GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "load_table"),
    ("HEAD", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "table_exists"),
    ("POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "update_table"),
    ("DELETE", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "drop_table"),
    ("POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics", "report_metrics"),
    ("POST", "/v1/{prefix}/namespaces/{namespace}/register", "register_table"),
    ("POST", "/v1/{prefix}/tables/rename", "rename_table"),
)
ENDPOINTS = [f"{method} {path}" for method, path, _ in ROUTES]
MUTATIONS = frozenset(op for method, _, op in ROUTES if method in ("POST", "DELETE")) - {
    "report_metrics"
}


def _pattern(path: str) -> re.Pattern[str]:
    body = path.replace("/v1/{prefix}", "").replace("{namespace}", _NS).replace("{table}", _T)
    return re.compile(f"^/v1{body}$")


_COMPILED = [(method, _pattern(path), op) for method, path, op in ROUTES]


def match(method: str, path: str) -> tuple[str, list[str] | None, str | None]:
    """(operation, namespace, table) of a request; 404 for unknown paths, 405 for a known path
    with another method. No prefix: this catalog serves one (``hive``)."""
    if method == "GET" and path == "/v1/config":
        return "config", None, None
    known = False
    for m, pattern, op in _COMPILED:
        found = pattern.match(path)
        if found is None:
            continue
        known = True
        if m != method:
            continue
        groups = found.groupdict()
        ns = unquote(groups["ns"]).split("\x1f") if groups.get("ns") else None
        table = unquote(groups["table"]) if groups.get("table") else None
        return op, ns, table
    if known:
        raise RestError(405, "MethodNotAllowedException", f"{method} is not served on {path}")
    raise RestError(404, "NotFoundException", f"no such endpoint: {method} {path}")
