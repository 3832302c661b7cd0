"""The filesystem side of DDL, for warehouse locations this process can reach.

A stock metastore creates a managed table's directory, deletes it on DROP TABLE and moves it on
RENAME through Hadoop's FileSystem. This service does the same for ``file:`` locations (and bare
paths). Other schemes (hdfs:, s3a:, ...) are left alone and logged: their data belongs to the
engines that write it.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

log = logging.getLogger(__name__)


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


def mkdirs(uri: str | None) -> bool:
    """Create the directory if it is local and missing; True when this call made it."""
    path = local_path(uri)
    if path is None:
        if uri:
            log.debug("not creating %s: not a local location", uri)
        return False
    if path.is_dir():
        return False
    try:
        path.mkdir(parents=True, exist_ok=True)
        return True
    except OSError as exc:
        log.warning("could not create %s: %s", path, exc)
        return False


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


def is_within(child: str | None, parent: str | None) -> bool:
    """Whether ``child`` is ``parent`` or lies below it (compared as local paths or URIs)."""
    if not child or not parent:
        return False
    c, p = local_path(child), local_path(parent)
    if c is not None and p is not None:
        return c == p or p in c.parents
    return child.rstrip("/") == parent.rstrip("/") or child.startswith(parent.rstrip("/") + "/")


def rename(src: str | None, dst: str | None) -> bool:
    """Move a local directory; True when it was moved."""
    s, d = local_path(src), local_path(dst)
    if s is None or d is None or not s.exists():
        return False
    if d.exists():
        raise FileExistsError(f"{dst} already exists")
    d.parent.mkdir(parents=True, exist_ok=True)
    os.rename(s, d)
    return True


def directory_stats(uri: str | None) -> tuple[int, int] | None:
    """(number of files, total bytes) below a local directory, skipping Hadoop's hidden files
    (names starting with '.' or '_'), as the metastore's quick statistics do; None if the
    location is not local or does not exist."""
    path = local_path(uri)
    if path is None or not path.is_dir():
        return None
    files = size = 0
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in names:
            if name.startswith((".", "_")):
                continue
            try:
                size += os.stat(os.path.join(root, name)).st_size
                files += 1
            except OSError:
                continue
    return files, size
