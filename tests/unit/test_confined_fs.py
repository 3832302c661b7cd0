"""ConfinedFS on real directories: normalisation, roots, and operations that never follow a
symlink or touch anything outside a root (docs/security.md, "Filesystem confinement")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hms_cache_proxy.confined_fs import ConfinedFS, OutsideRoots, Roots, local_path


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("/a/b", "/a/b"),
        ("file:/a//b/./c/", "/a/b/c"),
        ("file:///a/b/../c", "/a/c"),
        ("file://somehost/a/b", "/a/b"),
        ("/wh/db.db/../../x", "/x"),
        ("/wh/%2e%2e/%2E%2E/x", "/x"),
        ("/../../etc", "/etc"),
        ("FILE:/a", "/a"),
    ],
)
def test_local_path_normalises_before_any_check(given, expected):
    assert local_path(given) == expected


@pytest.mark.parametrize("given", ["hdfs://nn:8020/a", "s3a://b/a", "relative/x", "", None])
def test_other_filesystems_and_relative_paths_are_not_local(given):
    assert local_path(given) is None


def _fs(tmp_path: Path) -> tuple[ConfinedFS, Path, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "keep").write_bytes(b"k")
    root.mkdir()
    return ConfinedFS(Roots([str(root)])), root, outside


def test_nothing_outside_a_root_and_never_a_root_itself(tmp_path):
    fs, root, outside = _fs(tmp_path)
    for op in (fs.delete, fs.empty, fs.mkdirs, fs.stats):
        with pytest.raises(OutsideRoots):
            op(str(outside))
        with pytest.raises(OutsideRoots):
            op(f"{root}/../outside")
    for op in (fs.delete, fs.empty, fs.remove_empty_dir):
        with pytest.raises(OutsideRoots, match="never changed"):
            op(str(root))
    with pytest.raises(OutsideRoots):
        fs.rename(str(root / "a"), str(outside / "a"))
    assert (outside / "keep").exists() and root.is_dir()


def test_a_symlink_on_the_way_stops_the_operation(tmp_path):
    fs, root, outside = _fs(tmp_path)
    os.symlink(outside, root / "link")
    with pytest.raises(NotADirectoryError):
        fs.mkdirs(str(root / "link" / "new"))
    with pytest.raises(NotADirectoryError):
        fs.empty(str(root / "link" / "sub"))
    with pytest.raises(NotADirectoryError):
        fs.delete(str(root / "link" / "keep"))
    assert (outside / "keep").exists() and not (outside / "new").exists()


def test_delete_unlinks_symlinks_inside_a_tree_and_never_follows_them(tmp_path):
    fs, root, outside = _fs(tmp_path)
    (root / "t" / "d").mkdir(parents=True)
    (root / "t" / "d" / "f").write_bytes(b"x")
    os.symlink(outside, root / "t" / "d" / "to_dir")
    os.symlink(outside / "keep", root / "t" / "to_file")
    assert fs.delete(f"file:{root}/t") is True
    assert not (root / "t").exists()
    assert (outside / "keep").read_bytes() == b"k" and (outside / "sub").is_dir()
    assert fs.delete(str(root / "t")) is False  # already gone


def test_remove_empty_dir_counts_dot_files(tmp_path):
    fs, root, _ = _fs(tmp_path)
    (root / "a").mkdir()
    (root / "a" / ".ssh").mkdir()
    assert fs.remove_empty_dir(str(root / "a")) is False and (root / "a" / ".ssh").is_dir()
    (root / "b").mkdir()
    assert fs.remove_empty_dir(str(root / "b")) is True and not (root / "b").exists()


def test_mkdirs_rename_and_stats_inside_the_root(tmp_path):
    fs, root, outside = _fs(tmp_path)
    assert fs.mkdirs(str(root / "x" / "y")) is True
    assert fs.mkdirs(str(root / "x" / "y")) is False
    (root / "x" / "y" / "a").write_bytes(b"123")
    (root / "x" / "y" / "_SUCCESS").write_bytes(b"")
    (root / "x" / "y" / ".a.crc").write_bytes(b"12")
    os.symlink(outside / "keep", root / "x" / "y" / "link")
    assert fs.stats(str(root / "x")) == (1, 3)  # hidden names and symlinks not counted
    assert fs.stats(str(root / "missing")) == (0, 0)
    assert fs.rename(str(root / "x"), str(root / "z" / "x")) is True
    assert (root / "z" / "x" / "y" / "a").exists()
    (root / "w").mkdir()
    with pytest.raises(FileExistsError):
        fs.rename(str(root / "z"), str(root / "w"))
    assert fs.rename(str(root / "nothing"), str(root / "n2")) is False


def test_a_root_given_through_a_symlink_works_by_both_names(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "alias")
    fs = ConfinedFS(Roots([str(tmp_path / "alias")]))
    assert fs.inside(str(real / "t")) and fs.inside(str(tmp_path / "alias" / "t"))
    assert fs.mkdirs(str(tmp_path / "alias" / "t")) is True
    assert (real / "t").is_dir()


def test_filesystem_roots_setting_resolves_paths_and_refuses_the_filesystem_root(
    monkeypatch, tmp_path
):
    from pydantic import ValidationError

    from hms_cache_proxy.config import Settings

    monkeypatch.chdir(tmp_path)
    s = Settings(warehouse_dir="wh", filesystem_roots=["lake", "/data/ext"])
    assert s.filesystem_root_uris() == [
        f"file:{tmp_path}/wh",
        f"file:{tmp_path}/lake",
        "file:/data/ext",
    ]
    for bad in ("/", "file:///", ""):
        with pytest.raises(ValidationError, match="would confine nothing"):
            Settings(filesystem_roots=[bad])
