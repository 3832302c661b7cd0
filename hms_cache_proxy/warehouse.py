"""The filesystem side of DDL, for warehouse locations this process can reach.

A stock metastore creates a managed table's directory, deletes it on DROP TABLE and moves it on
RENAME through Hadoop's FileSystem. This service does the same for ``file:`` locations (and bare
paths). Other schemes (hdfs:, s3a:, ...) are left alone and logged: their data belongs to the
engines that write it.

It also holds the pure location rules of Hive's ``Warehouse``: how a client's location is
normalised (``getDnsPath``: Hadoop ``Path`` qualification) and how a table name becomes a
directory name (``MetaStoreUtils.encodeTableName``).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

log = logging.getLogger(__name__)

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


# -- filesystem effects (local locations only) ----------------------------------------------


def local_path(uri: str | None) -> Path | None:
    """The local path of a ``file:`` URI or bare absolute path; None for other schemes."""
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        path = unquote(parsed.path)
        if parsed.scheme == "" and not path.startswith("/"):
            return None
        return Path(path)
    return None


def is_local(uri: str | None) -> bool:
    return local_path(uri) is not None


def is_dir(uri: str | None) -> bool | None:
    """Whether the location is a directory; None when it is not a local location."""
    path = local_path(uri)
    return None if path is None else path.is_dir()


def exists(uri: str | None) -> bool | None:
    path = local_path(uri)
    return None if path is None else path.exists()


def mkdirs(uri: str | None) -> bool:
    """Create the directory if it is local and missing; True when this call made it.

    Raises OSError when a local directory cannot be created (Hive: "... is not a directory or
    unable to create one"); other schemes are left alone (False).
    """
    path = local_path(uri)
    if path is None:
        if uri:
            log.debug("not creating %s: not a local location", uri)
        return False
    if path.is_dir():
        return False
    path.mkdir(parents=True, exist_ok=True)
    return True


def delete(uri: str | None) -> None:
    """Delete a local directory tree (or file); other schemes are only logged."""
    path = local_path(uri)
    if path is None:
        if uri:
            log.info("not deleting %s: not a local location", uri)
        return
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    except OSError as exc:
        log.warning("could not delete %s: %s", path, exc)


def _is_hidden(name: str) -> bool:
    """FileUtils.HIDDEN_FILES_PATH_FILTER: names starting with '_' or '.' are hidden."""
    return name.startswith(("_", "."))


def is_empty_dir(uri: str | None) -> bool:
    """Warehouse.isEmptyDir: a local directory with no visible (non-hidden) entries."""
    path = local_path(uri)
    if path is None or not path.is_dir():
        return False
    try:
        return not any(not _is_hidden(child.name) for child in path.iterdir())
    except OSError:
        return False


def delete_empty_parents(uri: str | None, depth: int) -> None:
    """HMSHandler.deleteParentRecursive: delete up to ``depth`` levels of now-empty parents
    (e.g. ``ds=x`` after its last ``hr=`` partition was dropped)."""
    parent = parent_of(uri) if uri else None
    while depth > 0 and parent is not None and is_empty_dir(parent):
        delete(parent)
        parent = parent_of(parent)
        depth -= 1


def is_within(child: str | None, parent: str | None) -> bool:
    """Whether ``child`` is ``parent`` or lies below it (compared as local paths or URIs)."""
    if not child or not parent:
        return False
    c, p = local_path(child), local_path(parent)
    if c is not None and p is not None:
        return c == p or p in c.parents
    return child.rstrip("/") == parent.rstrip("/") or child.startswith(parent.rstrip("/") + "/")


def rename(src: str | None, dst: str | None) -> bool:
    """Move a local directory (creating the destination's parents); True when it was moved."""
    s, d = local_path(src), local_path(dst)
    if s is None or d is None or not s.exists():
        return False
    if d.exists():
        raise FileExistsError(f"{dst} already exists")
    d.parent.mkdir(parents=True, exist_ok=True)
    os.rename(s, d)
    return True


def directory_stats(uri: str | None) -> tuple[int, int] | None:
    """(number of files, total bytes) below a location, as the metastore's quick statistics
    count them (FileUtils.getFileStatusRecurse with Hadoop's hidden-file filter: names starting
    with '.' or '_' are skipped, directories are not counted). A missing local directory is
    ``(0, 0)`` (Hive lists nothing there); None when the location is not local."""
    path = local_path(uri)
    if path is None:
        return None
    if not path.is_dir():
        if path.is_file():
            return 1, path.stat().st_size
        return 0, 0
    files = size = 0
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if not _is_hidden(d)]
        for name in names:
            if _is_hidden(name):
                continue
            try:
                size += os.stat(os.path.join(root, name)).st_size
                files += 1
            except OSError:
                continue
    return files, size
