"""The pure location rules of Hive's ``Warehouse``: how a client's location is normalised
(``getDnsPath``: Hadoop ``Path`` qualification), how a table name becomes a directory name
(``MetaStoreUtils.encodeTableName``), parents, joins and relative paths.

A stock metastore creates a managed table's directory, deletes it on DROP TABLE and moves it on
RENAME through Hadoop's FileSystem. This service does the same for ``file:`` locations (and bare
paths) inside its roots only, through ``confined_fs``; other schemes (hdfs:, s3a:, ...) are
left alone: their data belongs to the engines that write it.
"""

from __future__ import annotations

import re

# Hadoop Path: a scheme is what precedes the first ':' when no '/' comes before it.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


class RelativePathError(ValueError):
    """A location that is neither absolute nor a URI (Hadoop refuses to qualify it)."""


def split_uri(uri: str) -> tuple[str | None, str | None, str]:
    """(scheme, authority, path) as Hadoop's ``Path(String)`` parses them."""
    scheme: str | None = None
    rest = uri
    m = _SCHEME.match(uri)
    if m is not None and "/" not in uri[: m.end()]:
        scheme, rest = m.group(1), uri[m.end() :]
    authority: str | None = None
    if rest.startswith("//"):
        end = rest.find("/", 2)
        authority, rest = (rest[2:], "") if end < 0 else (rest[2:end], rest[end:])
    return scheme, authority, rest


def _normalize_path(path: str) -> str:
    """Hadoop's normalizePath (no '//' runs, no trailing '/') and java.net.URI.normalize
    ('.' and 'x/..' segments removed)."""
    while "//" in path:
        path = path.replace("//", "/")
    absolute = path.startswith("/")
    out: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == ".." and out and out[-1] != "..":
            out.pop()
            continue
        out.append(seg)
    joined = "/".join(out)
    return ("/" + joined) if absolute else joined


def default_fs(root_uri: str) -> tuple[str, str | None]:
    """The (scheme, authority) bare paths are qualified with: the warehouse root's filesystem."""
    scheme, authority, _ = split_uri(root_uri)
    return (scheme or "file"), (authority or None)


def normalize_location(uri: str, fs: tuple[str, str | None] = ("file", None)) -> str:
    """Warehouse.getDnsPath: a location qualified with its filesystem, in Hadoop's spelling.

    ``file:///x`` -> ``file:/x``; ``/x`` -> ``file:/x`` (the default filesystem ``fs``);
    trailing '/' dropped; '//' collapsed; ``hdfs://nn:8020/a/`` -> ``hdfs://nn:8020/a``.
    A relative path raises RelativePathError, as Hadoop does.
    """
    scheme, authority, path = split_uri(uri)
    if scheme is None:
        scheme, authority = fs
        if not path.startswith("/"):
            raise RelativePathError(
                "java.lang.IllegalArgumentException: java.net.URISyntaxException: "
                f"Relative path in absolute URI: {scheme}:./{path}"
            )
    elif scheme.lower() == "file" and not authority:
        authority = None
    path = _normalize_path(path) if path else path
    if not path.startswith("/") and path:
        raise RelativePathError(
            "java.lang.IllegalArgumentException: java.net.URISyntaxException: "
            f"Relative path in absolute URI: {uri}"
        )
    head = f"{scheme}:" + (f"//{authority}" if authority else "")
    return head + path


def is_root(uri: str) -> bool:
    """Whether a (normalised) location is the root of its filesystem."""
    _, _, path = split_uri(uri)
    return path in ("", "/")


def join(parent: str, child: str) -> str:
    """Hadoop ``new Path(parent, child)`` for a plain relative child."""
    return parent.rstrip("/") + "/" + child


def parent_of(uri: str) -> str | None:
    scheme, authority, path = split_uri(uri)
    if path in ("", "/"):
        return None
    up = path.rsplit("/", 1)[0] or "/"
    head = (f"{scheme}:" if scheme else "") + (f"//{authority}" if authority else "")
    return head + up


def relativize(base: str, child: str) -> str:
    """java.net.URI.relativize: ``child`` relative to ``base``, or ``child`` itself when it
    does not lie below ``base`` (scheme and authority must match too)."""
    b_scheme, b_auth, b_path = split_uri(base)
    c_scheme, c_auth, c_path = split_uri(child)
    if (b_scheme or "").lower() != (c_scheme or "").lower() or (b_auth or "") != (c_auth or ""):
        return child
    prefix = b_path if b_path.endswith("/") else b_path + "/"
    if c_path == b_path:
        return ""
    if not c_path.startswith(prefix):
        return child
    return c_path[len(prefix) :]


def with_filesystem_of(path_uri: str, fs_uri: str) -> str:
    """Warehouse.constructRenamedPath: ``path_uri``'s path on ``fs_uri``'s scheme/authority."""
    scheme, authority, _ = split_uri(fs_uri)
    _, _, path = split_uri(path_uri)
    head = (f"{scheme}:" if scheme else "") + (f"//{authority}" if authority else "")
    return head + path


def encode_table_name(name: str) -> str:
    """MetaStoreUtils.encodeTableName: every char that is not a letter, digit or '_' becomes
    ``-<code>-`` (``a/b`` -> ``a-47-b``), so a table name is one directory level."""
    return "".join(ch if ch.isalnum() or ch == "_" else f"-{ord(ch)}-" for ch in name)


# -- which locations are local ---------------------------------------------------------------


def is_local(uri: str | None) -> bool:
    """Whether a location is a ``file:`` URI or a bare absolute path (other schemes are never
    touched by this service). Every file operation goes through confined_fs.ConfinedFS."""
    if not uri:
        return False
    scheme, _, path = split_uri(uri)
    return (scheme is None and path.startswith("/")) or (
        scheme is not None and scheme.lower() == "file"
    )
