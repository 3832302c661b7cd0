"""A metastore's JDBC connection URL turned into the SQLAlchemy URL this service connects with.

Only PostgreSQL's (``jdbc:postgresql:``) can be served; the others get a refusal that says why.
The URL is built with ``URL.create`` from its parts, so a password with ``@ : / & %`` in it
arrives at the database unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote

from sqlalchemy.engine import URL

from hms_cache_proxy import dburl

DEFAULT_PORT = 5432  # pgjdbc's

_REFUSED = {
    "derby": "an embedded Derby database (jdbc:derby:), which only one process can open, so it "
    "cannot be shared with this service; move the metastore to PostgreSQL (Hive's schematool "
    "-dbType postgres -initSchema), or give --database-url sqlite:///PATH for a metastore of "
    "this service's own",
    "mysql": "a MySQL database (jdbc:mysql:), which hms-cache-proxy does not support (it speaks "
    "PostgreSQL and SQLite only, no MySQL driver or SQL dialect); use a PostgreSQL metastore "
    "database",
    "mariadb": "a MariaDB database (jdbc:mariadb:), which hms-cache-proxy does not support (it "
    "speaks PostgreSQL and SQLite only, no MySQL/MariaDB driver or SQL dialect); use a "
    "PostgreSQL metastore database",
    "oracle": "an Oracle database (jdbc:oracle:), which hms-cache-proxy does not support (it "
    "speaks PostgreSQL and SQLite only); use a PostgreSQL metastore database",
    "sqlserver": "a SQL Server database (jdbc:sqlserver:), which hms-cache-proxy does not support "
    "(it speaks PostgreSQL and SQLite only); use a PostgreSQL metastore database",
}

# pgjdbc parameters that only tune the Java driver: nothing to carry over.
_JAVA_ONLY = {
    "applicationname",
    "connecttimeout",
    "logintimeout",
    "sockettimeout",
    "tcpkeepalive",
    "preparethreshold",
    "rewritebatchedinserts",
    "loadbalancehosts",
    "stringtype",
    "loglevel",
    "loggerlevel",
    "defaultrowfetchsize",
    "binarytransfer",
    "autosave",
}
_SSL_PASSED = ("sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword")
_SSL_MODES = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}


class JdbcURLError(ValueError):
    """A connection URL that cannot be served; the message says what was found and what to do."""


@dataclass
class Translated:
    url: URL
    notes: list[str] = field(default_factory=list)  # what was ignored, for the log


def to_sqlalchemy(jdbc_url: str, user: str | None, password: str | None) -> Translated:
    """``jdbc:postgresql://host[:port][,host2[:port2]]/db?params`` as a SQLAlchemy URL.

    ``user=`` and ``password=`` in the URL win over ``user``/``password``, as in pgjdbc.
    """
    url = jdbc_url.strip()
    if not url.lower().startswith("jdbc:"):
        raise JdbcURLError(f"{_shown(url)!r} is not a JDBC URL (jdbc:postgresql://HOST:PORT/DB)")
    subprotocol = url[5:].split(":", 1)[0].lower()
    if subprotocol == "jtds":
        subprotocol = "sqlserver"
    if subprotocol in _REFUSED:
        raise JdbcURLError(f"the metastore database is {_REFUSED[subprotocol]}")
    if subprotocol != "postgresql":
        raise JdbcURLError(
            f"the metastore database URL {_shown(url)!r} is not PostgreSQL's "
            "(jdbc:postgresql://...); hms-cache-proxy serves PostgreSQL and SQLite only"
        )
    rest = url[len("jdbc:postgresql:") :]
    rest, _, query_text = rest.partition("?")
    hosts: list[tuple[str, int]] = []
    if rest.startswith("//"):
        authority, slash, database = rest[2:].partition("/")
        hosts = [_host_port(h, jdbc_url) for h in authority.split(",") if h] or [
            ("localhost", DEFAULT_PORT)
        ]
    else:
        database = rest.lstrip("/")
        hosts = [("localhost", DEFAULT_PORT)]
    params = _params(query_text)
    user = params.pop("user", user)
    password = params.pop("password", password)
    query, notes = _libpq_query(params)
    if len(hosts) > 1:
        # libpq tries the hosts in order, as pgjdbc does by default.
        query["host"] = tuple(f"{_bracketed(h)}:{p}" for h, p in hosts)
        host, port = None, None
    else:
        host, port = hosts[0]
    built = URL.create(
        dburl.POSTGRES_DEFAULT,
        username=user or None,
        password=password if password else None,
        host=host,
        port=port,
        database=unquote(database) or None,
        query=query,
    )
    return Translated(built, notes)


def _host_port(text: str, whole: str) -> tuple[str, int]:
    if text.startswith("["):  # [IPv6]:port
        end = text.find("]")
        host, rest = text[1:end], text[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = text.partition(":")
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise JdbcURLError(f"bad port {port_text!r} in {_shown(whole)!r}")
    return host, int(port_text)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _params(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in text.split("&"):
        if pair:
            key, _, value = pair.partition("=")
            out[unquote(key)] = unquote(value)
    return out


def _libpq_query(params: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """pgjdbc parameters as libpq connection parameters; Java-only ones noted and dropped."""
    query: dict[str, str] = {}
    notes: list[str] = []
    ssl = params.pop("ssl", "").lower()
    factory = params.pop("sslfactory", "")
    for key in _SSL_PASSED:
        if key in params:
            query[key] = params.pop(key)
    if "sslmode" in query and query["sslmode"] not in _SSL_MODES:
        raise JdbcURLError(
            f"sslmode={query['sslmode']} in the metastore database URL: use one of "
            + ", ".join(sorted(_SSL_MODES))
        )
    if "sslmode" not in query:
        if factory.endswith("NonValidatingFactory") and ssl == "true":
            query["sslmode"] = "require"  # encrypted, certificate not checked
        elif ssl == "true":
            query["sslmode"] = "verify-full"  # what pgjdbc's ssl=true means
    target = params.pop("targetServerType", None)
    if target is not None and target.lower() not in ("any", "primary", "master"):
        raise JdbcURLError(
            f"targetServerType={target} in the metastore database URL: the metastore writes, so "
            "it needs the primary (targetServerType=primary or any)"
        )
    if target is not None and target.lower() != "any":
        query["target_session_attrs"] = "read-write"
    if "currentSchema" in params:
        raise JdbcURLError(
            f"currentSchema={params['currentSchema']} in the metastore database URL: "
            "hms-cache-proxy reads the metastore tables from the user's default search_path; "
            "set it for the user instead (ALTER ROLE ... SET search_path = ...)"
        )
    dropped = sorted(params)
    if dropped:
        java = [k for k in dropped if k.lower() in _JAVA_ONLY]
        other = [k for k in dropped if k.lower() not in _JAVA_ONLY]
        if java:
            notes.append("JDBC driver parameters not used (Java-only): " + ", ".join(java))
        if other:
            notes.append("unknown JDBC parameters not used: " + ", ".join(other))
    return query, notes


def _shown(url: str) -> str:
    """The JDBC URL without a password= parameter's value."""
    head, sep, query = url.partition("?")
    if not sep:
        return url
    pairs = [
        (p.split("=", 1)[0] + "=***") if p.lower().startswith("password=") else p
        for p in query.split("&")
    ]
    return head + "?" + "&".join(pairs)
