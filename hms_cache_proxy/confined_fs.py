"""File operations that never leave the configured roots.

This service acts on the filesystem as itself, not as the calling user (stock Hive checks the
parent's permissions and acts as the caller), so it confines itself: it creates, empties,
renames, deletes and lists only below a root (the warehouse, the external warehouse and
``filesystem_roots``). A location is normalised lexically first (percent-escapes, ``.``,
``..``, ``//``, the host part of a ``file:`` URI), then every operation walks from the root's
directory one component at a time with ``O_NOFOLLOW`` and acts relative to the parent's file
descriptor, so a symlink anywhere on the way (also one planted after the object was created)
stops the operation instead of leading out of the root. Trees are removed through descriptors
too: a symlink inside is unlinked, never followed. See docs/security.md, "Filesystem
confinement".
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import unquote

from hms_cache_proxy.warehouse import split_uri

log = logging.getLogger(__name__)

_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_CREATE_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class OutsideRoots(OSError):
    """A location this service may not touch (outside every root, or a root itself)."""


def local_path(uri: str | None) -> str | None:
    """The normalised absolute local path of a ``file:`` URI or bare absolute path; None for
    other schemes (hdfs:, s3a:, ...), relative paths and empty locations.

    ``file://host/p`` is ``/p`` (that is the file the platform would act on), percent-escapes
    are decoded before ``.``/``..`` segments are resolved, so ``%2e%2e`` cannot slip past.
    """
    if not uri:
        return None
    scheme, _authority, path = split_uri(uri)
    if scheme is not None and scheme.lower() != "file":
        return None
    path = unquote(path)
    if not path.startswith("/") or "\x00" in path:
        return None
    parts: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts:
                parts.pop()
            continue
        parts.append(seg)
    return "/" + "/".join(parts)


def is_below(path: str, parent: str) -> bool:
    """Whether ``path`` lies strictly below ``parent`` (both normalised absolute paths)."""
    return path != parent and path.startswith(parent.rstrip("/") + "/")


def is_within(path: str, parent: str) -> bool:
    """Whether ``path`` is ``parent`` or lies below it."""
    return path == parent or is_below(path, parent)


class Roots:
    """The directories this service may change: each given root as written (normalised) and
    as its real path, so a root reached through a symlink of the operator's works both ways."""

    def __init__(self, roots: Iterable[str]) -> None:
        found: list[str] = []
        for root in roots:
            path = local_path(root)
            if path is None:
                log.info("filesystem root %s is not a local path: no files are touched there", root)
                continue
            for p in (path, os.path.realpath(path)):
                if p not in found:
                    found.append(p)
        # Longest first, so root_of finds the innermost root.
        self.paths: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))

    def root_of(self, path: str | None) -> str | None:
        """The root ``path`` is (or lies below), None when it is outside every root."""
        if path is None:
            return None
        for root in self.paths:
            if is_within(path, root):
                return root
        return None

    def is_root(self, path: str) -> bool:
        return path in self.paths

    def describe(self) -> str:
        """The roots for messages, as their original spelling (one per root)."""
        return ", ".join(sorted(set(self.paths))) or "(none: no local root is configured)"


class ConfinedFS:
    """mkdir, delete, empty, rename and list below the roots, through directory descriptors."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots

    # -- checks ----------------------------------------------------------------------------------

    def inside(self, uri: str | None) -> bool:
        """Whether the location is local and inside (or is) a root."""
        return self.roots.root_of(local_path(uri)) is not None

    def _split(self, uri: str | None, *, allow_root: bool = False) -> tuple[str, list[str]]:
        """(root, components below it) of a location; OutsideRoots when it may not be touched."""
        path = local_path(uri)
        root = self.roots.root_of(path)
        if path is None or root is None:
            raise OutsideRoots(
                f"{uri} is outside the directories this metastore may change "
                f"({self.roots.describe()})"
            )
        parts = [p for p in path[len(root) :].split("/") if p]
        if not parts and not allow_root:
            raise OutsideRoots(f"{uri} is a filesystem root of this metastore; it is never changed")
        return root, parts

    @contextmanager
    def _walk(self, root: str, parts: list[str], *, create: bool = False) -> Iterator[int]:
        """A descriptor of ``root/parts...``, every component opened without following
        symlinks; missing components are made when ``create`` (FileNotFoundError otherwise)."""
        if create and not os.path.isdir(root):
            os.makedirs(root, exist_ok=True)
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            for part in parts:
                try:
                    nxt = os.open(part, _OPEN_DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, dir_fd=fd)
                    except FileExistsError:
                        pass
                    nxt = os.open(part, _OPEN_DIR, dir_fd=fd)
                except OSError as exc:
                    raise NotADirectoryError(
                        f"{part} below {root} is a symlink or not a directory: {exc.strerror}"
                    ) from None
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    # -- reads -----------------------------------------------------------------------------------

    def _lstat(self, uri: str | None) -> os.stat_result | None:
        """lstat of a location inside the roots; None when it (or a directory on the way) is
        missing. OutsideRoots when it is not inside a root."""
        root, parts = self._split(uri, allow_root=True)
        if not parts:
            return os.stat(root) if os.path.isdir(root) else None
        try:
            with self._walk(root, parts[:-1]) as fd:
                return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def exists(self, uri: str | None) -> bool:
        return self._lstat(uri) is not None

    def is_dir(self, uri: str | None) -> bool:
        st = self._lstat(uri)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def stats(self, uri: str | None) -> tuple[int, int]:
        """(visible files, their bytes) below a location inside the roots, as the metastore's
        quick statistics count them (names starting with '.' or '_' skipped); symlinks are
        neither followed nor counted."""
        root, parts = self._split(uri, allow_root=True)
        st = self._lstat(uri)
        if st is None:
            return 0, 0
        if stat.S_ISREG(st.st_mode):
            return 1, st.st_size
        if not stat.S_ISDIR(st.st_mode):
            return 0, 0
        files = size = 0
        with self._walk(root, parts) as top:
            for _dir, dirs, names, dfd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
                for name in names:
                    if name.startswith((".", "_")):
                        continue
                    try:
                        f = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(f.st_mode):
                        files += 1
                        size += f.st_size
        return files, size

    def read_bytes(self, uri: str | None, limit: int) -> bytes:
        """The contents of the regular file at the location (not through a symlink);
        FileNotFoundError when missing, ValueError when longer than ``limit`` bytes."""
        root, parts = self._split(uri)
        with self._walk(root, parts[:-1]) as parent:
            fd = os.open(parts[-1], _OPEN_FILE, dir_fd=parent)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise IsADirectoryError(f"{uri} is not a regular file")
            data = f.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"{uri} is longer than {limit} bytes")
        return data

    # -- changes ---------------------------------------------------------------------------------

    def write_new(self, uri: str | None, data: bytes) -> None:
        """Create the file at the location with ``data`` (its directories made inside the
        root); FileExistsError when something is already there."""
        root, parts = self._split(uri)
        with self._walk(root, parts[:-1], create=True) as parent:
            fd = os.open(parts[-1], _CREATE_FILE, 0o644, dir_fd=parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def mkdirs(self, uri: str | None) -> bool:
        """Create the directory (and missing parents, all inside its root); True when it was
        missing. A symlink or file on the way raises NotADirectoryError."""
        root, parts = self._split(uri, allow_root=True)
        if self.is_dir(uri):
            return False
        with self._walk(root, parts, create=True):
            return True

    def delete(self, uri: str | None) -> bool:
        """Remove the file or directory tree at the location (a symlink there is unlinked, not
        followed); True when something was removed. Never a root."""
        root, parts = self._split(uri)
        try:
            with self._walk(root, parts[:-1]) as parent:
                return _remove_entry(parent, parts[-1])
        except FileNotFoundError:
            return False

    def empty(self, uri: str | None) -> None:
        """Remove everything inside the directory at the location, keeping the directory."""
        root, parts = self._split(uri)
        try:
            with self._walk(root, parts) as fd:
                _remove_contents(fd)
        except FileNotFoundError:
            return

    def remove_empty_dir(self, uri: str | None) -> bool:
        """rmdir: removes the directory only when it holds nothing at all (dot-files count)."""
        root, parts = self._split(uri)
        try:
            with self._walk(root, parts[:-1]) as parent:
                os.rmdir(parts[-1], dir_fd=parent)
                return True
        except OSError:
            return False

    def rename(self, src: str | None, dst: str | None) -> bool:
        """Move ``src`` to ``dst`` (both inside roots; dst's parents created); False when src
        does not exist, FileExistsError when dst does."""
        s_root, s_parts = self._split(src)
        d_root, d_parts = self._split(dst)
        try:
            with self._walk(s_root, s_parts[:-1]) as s_parent:
                try:
                    os.stat(s_parts[-1], dir_fd=s_parent, follow_symlinks=False)
                except FileNotFoundError:
                    return False
                with self._walk(d_root, d_parts[:-1], create=True) as d_parent:
                    try:
                        os.stat(d_parts[-1], dir_fd=d_parent, follow_symlinks=False)
                    except FileNotFoundError:
                        pass
                    else:
                        raise FileExistsError(f"{dst} already exists")
                    os.rename(s_parts[-1], d_parts[-1], src_dir_fd=s_parent, dst_dir_fd=d_parent)
                    return True
        except FileNotFoundError:
            return False


def _remove_entry(parent_fd: int, name: str) -> bool:
    """Remove ``name`` in the directory ``parent_fd``: a file or symlink is unlinked, a
    directory emptied through its own descriptor (opened with O_NOFOLLOW) and removed."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return True
    fd = os.open(name, _OPEN_DIR, dir_fd=parent_fd)
    try:
        if not os.path.samestat(st, os.fstat(fd)):
            raise OSError(f"{name} was replaced while being deleted")
        _remove_contents(fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)
    return True


def _remove_contents(fd: int) -> None:
    for name in os.listdir(fd):
        _remove_entry(fd, name)
