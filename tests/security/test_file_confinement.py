"""Filesystem confinement against a real server over loopback, on SQLite and PostgreSQL.

Each attack from the review of commit 289ef4f (issue 12, finding 1) is run as written: the
call is refused (or kept as metadata only) and the victim's files are still there afterwards.
Then the legitimate flows: managed tables, partitions and databases still get their
directories made and deleted. The rules: docs/security.md, "Filesystem confinement".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.confined_fs import local_path
from hms_cache_proxy.idl import hms
from tests.support.apache_thrift import apache_client
from tests.support.metastore import partition, raises, table, uri, warehouse_dir, write_files
from tests.support.security import sasl_client
from tests.support.server import running_service

EXTERNAL = {"EXTERNAL": "TRUE"}
PURGE = {"EXTERNAL": "TRUE", "external.table.purge": "true"}


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """Files outside the warehouse that no client may reach through the metastore."""
    v = tmp_path / "victim"
    write_files(v, {"keep.txt": b"keep", "sub/deep.txt": b"deep"})
    return v


def _intact(victim: Path) -> None:
    assert (victim / "keep.txt").read_bytes() == b"keep"
    assert (victim / "sub" / "deep.txt").read_bytes() == b"deep"


@pytest.fixture
def serve(database_url: str, tmp_path: Path) -> Iterator[Callable[..., tuple[Any, Any]]]:
    """Starts the service with extra settings: (service, Apache Thrift client)."""
    with ExitStack() as stack:

        def start(**overrides: Any) -> tuple[Any, Any]:
            svc = stack.enter_context(
                running_service(database_url, tmp_path / "warehouse", **overrides)
            )
            client, transport = apache_client("127.0.0.1", svc.port)
            stack.callback(transport.close)
            return svc, client

        yield start


# -- the attacks -----------------------------------------------------------------------------------


def test_create_table_outside_the_roots_is_refused_however_it_is_spelled(
    service, client, T, victim
):
    wh = warehouse_dir(service)
    spellings = [
        str(victim),
        f"file:{victim}",
        f"file://otherhost{victim}",  # a host part: the same local file
        f"{wh}/db.db/../../victim",  # stored normalised to <tmp>/victim
        f"{wh}/%2e%2e/victim",  # escaped dots, decoded before the check
        f"{wh}//./t/../../victim/",
    ]
    for i, location in enumerate(spellings):
        with raises(T.InvalidObjectException, contains="is outside the directories") as info:
            client.create_table(table(T, "default", f"t{i}", location=location))
        assert str(wh) in info.value.message and "filesystem_roots" in info.value.message
    assert client.get_all_tables("default") == []
    _intact(victim)


def test_drop_table_with_delete_data_never_reaches_outside(service, client, T, victim):
    # external (metadata only), purge switched on later through alter_table: the drop keeps it
    client.create_table(
        table(T, "default", "ext", location=str(victim), params=EXTERNAL, table_type=None)
    )
    new = client.get_table("default", "ext")
    new.parameters["external.table.purge"] = "true"
    client.alter_table("default", "ext", new)
    client.drop_table("default", "ext", True)
    _intact(victim)
    # purge asked for at create: refused (its data could be deleted)
    with raises(T.InvalidObjectException, contains="is outside the directories"):
        client.create_table(
            table(T, "default", "p", location=str(victim), params=PURGE, table_type=None)
        )
    _intact(victim)


def test_truncate_and_alter_cannot_be_pointed_outside(service, client, T, victim, tmp_path):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "t"))
    new = client.get_table("default", "t")
    for location in (f"{wh}/t/../../victim", str(victim), f"{wh}/%2e%2e/victim"):
        new.sd.location = location
        with raises(T.InvalidOperationException, contains="is outside the directories"):
            client.alter_table("default", "t", new)
    assert client.get_table("default", "t").sd.location == uri(wh / "t")
    write_files(wh / "t", {"f": b"1"})
    client.truncate_table("default", "t", None)  # its own directory: emptied
    assert (wh / "t").is_dir() and not (wh / "t" / "f").exists()
    # partitions: those below the table's directory are emptied, one elsewhere is refused
    client.create_table(table(T, "default", "pt", keys=["ds:string"]))
    client.add_partition(partition(T, "default", "pt", ["a"]))
    write_files(wh / "pt" / "ds=a", {"f": b"1"})
    client.truncate_table("default", "pt", ["ds=a"])
    assert (wh / "pt" / "ds=a").is_dir() and not (wh / "pt" / "ds=a" / "f").exists()
    client.add_partition(partition(T, "default", "pt", ["b"], location=f"{wh}/elsewhere"))
    write_files(wh / "elsewhere", {"f": b"1"})
    with raises(T.MetaException, contains=f"Cannot truncate default.pt: {uri(wh / 'elsewhere')}"):
        client.truncate_table("default", "pt", None)
    assert (wh / "elsewhere" / "f").exists()
    # an external table kept as metadata only there may not be truncated
    client.create_table(
        table(T, "default", "ext", location=str(victim), params=EXTERNAL, table_type=None)
    )
    with raises(T.MetaException, contains=f"Cannot truncate default.ext: {uri(victim)}"):
        client.truncate_table("default", "ext", None)
    _intact(victim)


def test_alter_table_onto_a_plain_file_is_refused(service, client, T, tmp_path):
    plain = tmp_path / "passwd"
    plain.write_bytes(b"root:x:0:0")
    client.create_table(table(T, "default", "t"))
    new = client.get_table("default", "t")
    new.sd.location = str(plain)
    with raises(T.InvalidOperationException, contains=f"{uri(plain)} is outside"):
        client.alter_table("default", "t", new)
    client.drop_table("default", "t", True)
    assert plain.read_bytes() == b"root:x:0:0"


def test_create_table_makes_no_directory_outside_the_roots(service, client, T, tmp_path):
    with raises(T.InvalidObjectException, contains="is outside the directories"):
        client.create_table(table(T, "default", "m", location=str(tmp_path / "made" / "m")))
    client.create_table(
        table(T, "default", "e", location=str(tmp_path / "made" / "e"), params=EXTERNAL)
    )
    assert client.get_table("default", "e").sd.location == uri(tmp_path / "made" / "e")
    assert not (tmp_path / "made").exists()  # metadata only: never created


def test_external_locations_outside_the_roots_can_be_refused(serve, T, tmp_path, victim):
    _, client = serve(external_locations_outside_roots="refuse")
    with raises(T.InvalidObjectException, contains="external_locations_outside_roots: refuse"):
        client.create_table(
            table(T, "default", "e", location=str(victim), params=EXTERNAL, table_type=None)
        )
    client.create_table(table(T, "default", "pt", keys=["ds:string"], params=EXTERNAL))
    with raises(T.MetaException, contains="external_locations_outside_roots: refuse"):
        client.add_partition(partition(T, "default", "pt", ["a"], location=str(victim)))
    _intact(victim)


def test_create_database_outside_the_roots_is_refused(service, client, T, victim):
    wh = warehouse_dir(service)
    with raises(T.MetaException, contains=f"database d location {uri(victim)} is outside"):
        client.create_database(T.Database(name="d", locationUri=str(victim)))
    with raises(T.MetaException, contains="is outside the directories"):
        client.create_database(T.Database(name="d", locationUri=f"{wh}/../victim"))
    with raises(T.MetaException, contains="is a filesystem root of this metastore"):
        client.create_database(T.Database(name="d", locationUri=str(wh)))
    client.create_database(T.Database(name="db1"))
    with raises(T.MetaException, contains="lies inside database hive.db1's directory"):
        client.create_database(T.Database(name="d", locationUri=f"{wh}/db1.db/d"))
    with raises(T.MetaException, contains="is outside the directories"):
        client.alter_database("db1", T.Database(name="db1", locationUri=str(victim)))
    client.drop_database("db1", True, True)
    assert not (wh / "db1.db").exists() and wh.is_dir()
    assert "d" not in client.get_all_databases()
    _intact(victim)


def test_create_catalog_outside_the_roots_is_refused(service, client, T, tmp_path, victim):
    wh = warehouse_dir(service)
    with raises(
        T.InvalidObjectException, contains=f"catalog c1 location {uri(victim / 'c1')} is outside"
    ):
        client.create_catalog(
            T.CreateCatalogRequest(catalog=T.Catalog(name="c1", locationUri=str(victim / "c1")))
        )
    assert not (victim / "c1").exists()
    client.create_catalog(
        T.CreateCatalogRequest(catalog=T.Catalog(name="c2", locationUri=f"{wh}/c2"))
    )
    assert (wh / "c2").is_dir()
    _intact(victim)


def test_partitions_outside_the_roots_are_refused_for_managed_tables(service, client, T, victim):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "pt", keys=["ds:string"]))
    for location in (str(victim), f"{wh}/pt/../../victim"):
        with raises(T.MetaException, contains="is outside the directories"):
            client.add_partition(partition(T, "default", "pt", ["x"], location=location))
    client.add_partition(partition(T, "default", "pt", ["a"]))
    new = client.get_partition("default", "pt", ["a"])
    new.sd.location = str(victim)
    with raises(T.InvalidOperationException, contains="is outside the directories"):
        client.alter_partition("default", "pt", new)
    client.drop_partition("default", "pt", ["a"], True)
    assert not (wh / "pt" / "ds=a").exists()
    _intact(victim)


def test_dropping_a_partition_never_removes_a_parent_holding_dot_files(
    service, client, T, tmp_path
):
    wh = warehouse_dir(service)
    # outside the roots: an external table's partition is metadata only
    home = tmp_path / "home1"
    write_files(home, {".ssh/id_rsa": b"key", "data/f": b"d"})
    client.create_table(table(T, "default", "ext", keys=["ds:string"], params=EXTERNAL))
    client.add_partition(partition(T, "default", "ext", ["a"], location=str(home / "data")))
    client.drop_partition("default", "ext", ["a"], True)
    with raises(T.MetaException, contains="is outside the directories"):
        client.create_table(table(T, "default", "m", keys=["ds:string"]))
        client.add_partition(partition(T, "default", "m", ["a"], location=str(home / "data")))
    assert (home / ".ssh" / "id_rsa").read_bytes() == b"key" and (home / "data" / "f").exists()
    # inside the warehouse but outside the table's directory: the data is kept
    inner = wh / "home1"
    write_files(inner, {".ssh/id_rsa": b"key", "data/f": b"d"})
    client.add_partition(partition(T, "default", "m", ["b"], location=str(inner / "data")))
    client.drop_partition("default", "m", ["b"], True)
    assert (inner / ".ssh" / "id_rsa").read_bytes() == b"key" and (inner / "data" / "f").exists()
    # below the table: the partition goes, a parent holding only a dot-file stays
    client.create_table(table(T, "default", "two", keys=["ds:string", "hr:string"]))
    client.add_partition(partition(T, "default", "two", ["a", "1"]))
    write_files(wh / "two" / "ds=a", {".keep": b"mine"})
    client.drop_partition("default", "two", ["a", "1"], True)
    assert not (wh / "two" / "ds=a" / "hr=1").exists()
    assert (wh / "two" / "ds=a" / ".keep").read_bytes() == b"mine"


@pytest.mark.parametrize("cache_enabled", [True, False], ids=["cache_on", "cache_off"])
def test_a_user_cannot_reach_another_databases_directory(serve, tmp_path, cache_enabled):
    svc, _ = serve(
        cache_enabled=cache_enabled,
        sasl_enabled=True,
        sasl_users={"alice": "alice-password", "bob": "bob-password"},
        allowed_databases_by_user={"alice": ["pub"], "bob": ["secret"]},
    )
    wh = warehouse_dir(svc)
    bob = sasl_client(svc.port, "bob", "bob-password")
    alice = sasl_client(svc.port, "alice", "alice-password")
    try:
        bob.create_database(hms.Database(name="secret", parameters={}))
        bob.create_table(table(hms, "secret", "t1"))
        write_files(wh / "secret.db" / "t1", {"part-0": b"bob's rows"})
        alice.create_database(hms.Database(name="pub", parameters={}))
        for location in (f"{wh}/secret.db", f"{wh}/secret.db/t1", f"{wh}/pub.db/../secret.db"):
            for params, table_type in (({}, "MANAGED_TABLE"), (PURGE, None), (EXTERNAL, None)):
                with pytest.raises(hms.InvalidObjectException) as info:
                    alice.create_table(
                        table(
                            hms,
                            "pub",
                            "evil",
                            location=location,
                            params=params,
                            table_type=table_type,
                        )
                    )
                assert "lies inside database hive.secret's directory" in info.value.message
        alice.create_table(table(hms, "pub", "ok", keys=["ds:string"]))
        with pytest.raises(hms.MetaException, match="lies inside database hive.secret's"):
            alice.add_partition(partition(hms, "pub", "ok", ["a"], location=f"{wh}/secret.db/t1"))
        # An alter moving a partition there: the handler reads the database directories
        # only once the store's transaction finds a changed location outside the table's
        # directory (that attempt rolls back, the second checks and refuses).
        alice.add_partition(partition(hms, "pub", "ok", ["b"]))
        moved = alice.get_partition("pub", "ok", ["b"])
        kept = moved.sd.location
        moved.sd.location = f"{wh}/secret.db/t1"
        for alter in (
            alice.alter_partition,
            lambda db, tbl, p: alice.alter_partitions(db, tbl, [p]),
        ):
            with pytest.raises(hms.InvalidOperationException, match="lies inside database hive.se"):
                alter("pub", "ok", moved)
        assert alice.get_partition("pub", "ok", ["b"]).sd.location == kept
        new = alice.get_table("pub", "ok")
        new.sd.location = f"{wh}/secret.db/t1"
        with pytest.raises(hms.InvalidOperationException, match="lies inside database"):
            alice.alter_table("pub", "ok", new)
        with pytest.raises(hms.MetaException, match="may not be created here"):
            alice.create_database(hms.Database(name="pub2", locationUri=f"{wh}/secret.db/x"))
        alice.drop_table("pub", "ok", True)
        alice.drop_database("pub", True, True)
        assert (wh / "secret.db" / "t1" / "part-0").read_bytes() == b"bob's rows"
        # bob's external data in the warehouse, outside any database's directory
        bob.create_table(
            table(hms, "secret", "ext", location=f"{wh}/lake/ext", params=EXTERNAL, table_type=None)
        )
        write_files(wh / "lake" / "ext", {"part-0": b"bob's files"})
        alice.create_database(hms.Database(name="pub", locationUri=f"{wh}/lake", parameters={}))
        alice.create_table(table(hms, "pub", "around", location=f"{wh}/lake/pub/t"))
        alice.drop_table("pub", "around", True)  # its own directory: deleted
        assert not (wh / "lake" / "pub" / "t").exists()
        alice.drop_database("pub", True, True)  # the directory holds bob's table: kept
        assert (wh / "lake" / "ext" / "part-0").read_bytes() == b"bob's files"
    finally:
        alice.close()
        bob.close()


def test_a_directory_holding_another_tables_data_is_kept_on_drop(service, client, T):
    wh = warehouse_dir(service)
    client.create_database(T.Database(name="secret"))
    client.create_table(
        table(T, "secret", "ext", location=f"{wh}/lake/ext", params=EXTERNAL, table_type=None)
    )
    write_files(wh / "lake" / "ext", {"part-0": b"rows"})
    client.create_table(table(T, "default", "around", location=f"{wh}/lake"))
    client.create_table(table(T, "default", "inside", location=f"{wh}/lake/ext/x"))
    client.drop_table("default", "around", True)
    client.drop_table("default", "inside", True)
    with raises(T.MetaException, contains="Cannot truncate secret.ext"):
        client.truncate_table("secret", "ext", None)  # not below its database's directory
    assert (wh / "lake" / "ext" / "part-0").read_bytes() == b"rows"
    assert (wh / "lake" / "ext" / "x").is_dir()  # made at create, kept: inside another's data


def test_symlinks_planted_in_the_warehouse_are_not_followed(service, client, T, victim, tmp_path):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "t"))
    os.symlink(victim, wh / "t" / "escape")
    client.truncate_table("default", "t", None)
    assert not os.path.lexists(wh / "t" / "escape")  # the link went, not what it points to
    os.symlink(victim, wh / "t" / "escape")
    client.drop_table("default", "t", True)
    assert not os.path.lexists(wh / "t")
    _intact(victim)
    # the database's directory swapped for a symlink after the table was made
    client.create_database(T.Database(name="d1"))
    client.create_table(table(T, "d1", "t"))
    other = tmp_path / "other"
    write_files(other, {"t/keep.txt": b"keep"})
    os.rename(wh / "d1.db", tmp_path / "d1.db.old")
    os.symlink(other, wh / "d1.db")
    client.drop_table("d1", "t", True)
    assert (other / "t" / "keep.txt").read_bytes() == b"keep"
    with raises(T.MetaException, contains="is not a directory or unable to create one"):
        client.create_table(table(T, "d1", "t2"))  # its directory would be made through it
    assert not (other / "t2").exists()


def test_symlinked_table_directory_is_unlinked_not_followed(service, client, T, victim):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "t"))
    os.rmdir(wh / "t")
    os.symlink(victim, wh / "t")
    with raises(T.MetaException, contains="Cannot truncate"):
        client.truncate_table("default", "t", None)
    client.drop_table("default", "t", True)
    assert not os.path.lexists(wh / "t")
    _intact(victim)


# -- what still works ------------------------------------------------------------------------------


def test_managed_directories_are_made_and_deleted(service, client, T):
    wh = warehouse_dir(service)
    client.create_database(T.Database(name="sales"))
    client.create_table(table(T, "sales", "orders", keys=["ds:string", "hr:string"]))
    client.add_partition(partition(T, "sales", "orders", ["a", "1"]))
    client.add_partition(partition(T, "sales", "orders", ["b", "1"]))
    write_files(wh / "sales.db" / "orders" / "ds=a" / "hr=1", {"f": b"1", ".f.crc": b"c"})
    client.drop_partition("sales", "orders", ["a", "1"], True)
    assert not (wh / "sales.db" / "orders" / "ds=a").exists()  # emptied parent removed too
    assert (wh / "sales.db" / "orders" / "ds=b" / "hr=1").is_dir()
    client.drop_table("sales", "orders", True)
    assert not (wh / "sales.db" / "orders").exists()
    client.create_table(table(T, "sales", "t2", location=f"{wh}/sales.db/custom/t2"))
    assert (wh / "sales.db" / "custom" / "t2").is_dir()
    client.drop_database("sales", True, True)
    assert not (wh / "sales.db").exists() and wh.is_dir()


def test_filesystem_roots_extend_where_data_may_live(serve, T, tmp_path):
    lake = tmp_path / "lake"
    _, client = serve(filesystem_roots=[str(lake)])
    write_files(lake / "events", {"a": b"12345"})
    client.create_table(
        table(T, "default", "events", location=str(lake / "events"), params=EXTERNAL)
    )
    assert client.get_table("default", "events").parameters["numFiles"] == "1"
    client.create_table(table(T, "default", "fresh", location=str(lake / "fresh"), params=EXTERNAL))
    assert (lake / "fresh").is_dir()
    client.drop_table("default", "events", True)
    assert (lake / "events" / "a").exists()  # external: kept
    client.create_database(T.Database(name="d", locationUri=str(lake / "dbs" / "d")))
    client.create_table(table(T, "d", "m"))
    assert (lake / "dbs" / "d" / "m").is_dir()
    with raises(T.InvalidObjectException, contains="below its own database's directory"):
        client.create_table(table(T, "d", "stray", location=str(lake / "stray")))
    client.drop_database("d", True, True)
    assert not (lake / "dbs" / "d").exists() and (lake / "fresh").is_dir()


# -- the external warehouse ------------------------------------------------------------------------


def _external(serve: Callable[..., tuple[Any, Any]], tmp_path: Path) -> tuple[Path, Path, Any]:
    """A service with an external warehouse: (warehouse, external warehouse, client)."""
    svc, client = serve(external_warehouse_dir=str(tmp_path / "external"))
    return warehouse_dir(svc), tmp_path / "external", client


def test_external_tables_go_to_the_external_warehouse_and_a_purge_drop_deletes_them(
    serve, T, tmp_path
):
    wh, ext, client = _external(serve, tmp_path)
    assert client.get_config_value("metastore.warehouse.external.dir", "") == uri(ext)
    client.create_database(T.Database(name="sales"))
    assert client.get_database("sales").locationUri == uri(wh / "sales.db")
    client.create_table(table(T, "sales", "events", params=PURGE, table_type=None))
    assert client.get_table("sales", "events").sd.location == uri(ext / "sales.db" / "events")
    client.create_table(table(T, "sales", "orders"))  # managed: in the warehouse as before
    assert client.get_table("sales", "orders").sd.location == uri(wh / "sales.db" / "orders")
    client.create_table(table(T, "default", "raw", params=EXTERNAL, table_type=None))
    assert client.get_table("default", "raw").sd.location == uri(ext / "raw")
    write_files(ext / "sales.db" / "events", {"part-0": b"rows", "ds=a/part-0": b"rows"})
    client.drop_table("sales", "events", True)  # external.table.purge: the data goes
    assert not (ext / "sales.db" / "events").exists() and (ext / "sales.db").is_dir()
    write_files(ext / "raw", {"part-0": b"rows"})
    client.drop_table("default", "raw", True)  # external without purge: kept
    assert (ext / "raw" / "part-0").read_bytes() == b"rows"
    # dropping the database takes its external directory only when nothing is left in it
    client.create_table(table(T, "sales", "kept", params=EXTERNAL, table_type=None))
    client.create_table(table(T, "sales", "purged", params=PURGE, table_type=None))
    write_files(ext / "sales.db" / "kept", {"part-0": b"rows"})
    client.drop_database("sales", True, True)
    assert (ext / "sales.db" / "kept" / "part-0").read_bytes() == b"rows"
    assert not (ext / "sales.db" / "purged").exists() and not (wh / "sales.db").exists()
    client.create_database(T.Database(name="tmp"))
    client.create_table(table(T, "tmp", "t", params=PURGE, table_type=None))
    write_files(ext / "tmp.db" / "t", {"part-0": b"rows"})
    client.drop_database("tmp", True, True)
    assert not (ext / "tmp.db").exists() and ext.is_dir()


def test_the_external_warehouse_itself_is_never_a_location(serve, T, tmp_path):
    _, ext, client = _external(serve, tmp_path)
    write_files(ext, {"lake/part-0": b"rows"})
    for params in (PURGE, EXTERNAL):
        with raises(T.InvalidObjectException, contains="is a filesystem root of this metastore"):
            client.create_table(
                table(T, "default", "t", location=str(ext), params=params, table_type=None)
            )
    with raises(T.MetaException, contains="is a filesystem root of this metastore"):
        client.create_database(T.Database(name="d", locationUri=f"file://{ext}/"))
    assert (ext / "lake" / "part-0").read_bytes() == b"rows"


def test_escapes_from_the_external_warehouse_are_refused_or_metadata_only(
    serve, T, tmp_path, victim
):
    _, ext, client = _external(serve, tmp_path)
    client.create_database(T.Database(name="d1"))
    for i, location in enumerate(
        (f"{ext}/d1.db/../../victim", f"{ext}/%2e%2e/victim", f"file://h{ext}/d1.db/../../victim")
    ):
        with raises(T.InvalidObjectException, contains="is outside the directories"):
            client.create_table(
                table(T, "d1", f"p{i}", location=location, params=PURGE, table_type=None)
            )
        client.create_table(
            table(T, "d1", f"e{i}", location=location, params=EXTERNAL, table_type=None)
        )
        stored = client.get_table("d1", f"e{i}").sd.location
        assert local_path(stored) == str(victim)  # kept as metadata only
        client.drop_table("d1", f"e{i}", True)
    _intact(victim)
    # a symlink in the external warehouse is not followed to make a directory ...
    ext.mkdir()
    os.symlink(victim, ext / "link")
    with raises(T.MetaException, contains="is not a directory or unable to create one"):
        client.create_table(
            table(T, "default", "t", location=f"{ext}/link/t", params=PURGE, table_type=None)
        )
    assert not (victim / "t").exists()
    # ... nor to delete one: the database's external directory swapped for a link after the
    # table was made
    client.create_table(table(T, "d1", "t", params=PURGE, table_type=None))
    assert (ext / "d1.db" / "t").is_dir()
    write_files(victim, {"t/keep.txt": b"keep"})
    os.rename(ext / "d1.db", tmp_path / "d1.db.old")
    os.symlink(victim, ext / "d1.db")
    client.drop_table("d1", "t", True)
    assert (victim / "t" / "keep.txt").read_bytes() == b"keep"
    client.drop_database("d1", True, True)
    assert os.path.islink(ext / "d1.db")  # a link, not a directory: never removed
    _intact(victim)


def test_another_databases_external_directory_is_off_limits(serve, T, tmp_path):
    _, ext, client = _external(serve, tmp_path)
    client.create_database(T.Database(name="secret"))
    client.create_table(table(T, "secret", "t1", params=PURGE, table_type=None))
    write_files(ext / "secret.db" / "t1", {"part-0": b"secret rows"})
    client.create_database(T.Database(name="pub"))
    for location in (f"{ext}/secret.db/evil", f"{ext}/secret.db/t1", f"{ext}/pub.db/../secret.db"):
        for params in (PURGE, EXTERNAL):
            with raises(T.InvalidObjectException, contains="database hive.secret's directory"):
                client.create_table(
                    table(T, "pub", "evil", location=location, params=params, table_type=None)
                )
    with raises(T.MetaException, contains="database hive.secret's directory"):
        client.create_database(T.Database(name="pub2", locationUri=f"{ext}/secret.db"))
    # the default database owns the external warehouse's root, not the other databases' dirs
    with raises(T.InvalidObjectException, contains="below its own database's directory"):
        client.create_table(
            table(T, "pub", "stray", location=f"{ext}/stray", params=PURGE, table_type=None)
        )
    client.drop_database("pub", True, True)
    assert (ext / "secret.db" / "t1" / "part-0").read_bytes() == b"secret rows"
