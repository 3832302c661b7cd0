"""The project's IDL against the facts of Hive 4.0's hive_metastore.thrift and fb303.thrift.

Every enum, const, struct (field ids, names, types, requiredness, defaults) and method (return
type, arguments, exceptions, oneway) the project defines must equal the reference, and the
module thriftpy2 loads at run time must be built from that same text. The facts are
tests/data/hive-metastore-thrift-4.0.json (see tests/data/README.md).
"""

from __future__ import annotations

import pytest

from hms_cache_proxy.idl import hms, idl_dir
from tests.support.facts import THRIFT_FACTS, load_facts
from tests.support.idl_text import read_idl


@pytest.fixture(scope="module")
def facts() -> dict:
    return load_facts(THRIFT_FACTS)


@pytest.fixture(scope="module")
def ours() -> dict:
    return read_idl(idl_dir() / "hive_metastore.thrift")


@pytest.fixture(scope="module")
def ours_fb303() -> dict:
    return read_idl(idl_dir() / "fb303.thrift")


def _default(value: object) -> object:
    """Facts write enum references as {ref, value}; the IDL text only names them."""
    if isinstance(value, dict) and "ref" in value:
        return value["ref"]
    return value


def _norm_fields(fields: list[dict]) -> list[tuple]:
    return [
        (f["id"], f["name"], f["type"], f.get("required", "default"), _default(f["default"]))
        for f in fields
    ]


def test_enums_match(facts: dict, ours: dict) -> None:
    assert ours["enums"] == facts["enums"]


def test_consts_match(facts: dict, ours: dict) -> None:
    assert ours["consts"] == facts["consts"]


def test_every_reference_struct_is_defined(facts: dict, ours: dict) -> None:
    missing = sorted(set(facts["structs"]) - set(ours["structs"]))
    assert not missing, f"structs missing from idl/hive_metastore.thrift: {missing}"


def test_no_struct_outside_the_reference(facts: dict, ours: dict) -> None:
    extra = sorted(set(ours["structs"]) - set(facts["structs"]))
    assert not extra, f"structs not in Hive 4.0's IDL: {extra}"


def test_struct_fields_match(facts: dict, ours: dict) -> None:
    diffs = []
    for name, ref in facts["structs"].items():
        mine = ours["structs"].get(name)
        if mine is None:
            continue
        if mine["kind"] != ref["kind"]:
            diffs.append(f"{name}: {mine['kind']} instead of {ref['kind']}")
        a, b = _norm_fields(mine["fields"]), _norm_fields(ref["fields"])
        if a != b:
            diffs.append(f"{name}:\n  ours {a}\n  hive {b}")
    assert not diffs, "\n".join(diffs)


def test_service_methods_match(facts: dict, ours: dict) -> None:
    ref = facts["services"]["ThriftHiveMetastore"]
    mine = ours["services"]["ThriftHiveMetastore"]
    assert mine["extends"] == ref["extends"] == "fb303.FacebookService"
    ref_methods = {m["name"]: m for m in ref["methods"]}
    my_methods = {m["name"]: m for m in mine["methods"]}
    assert sorted(set(my_methods) - set(ref_methods)) == [], "methods not in Hive 4.0's IDL"
    assert sorted(set(ref_methods) - set(my_methods)) == [], "Hive 4.0 methods missing"
    diffs = []
    for name, r in ref_methods.items():
        m = my_methods[name]
        want = (
            r["oneway"],
            r["returns"],
            [(a["id"], a["name"], a["type"], _default(a["default"])) for a in r["args"]],
            r["throws"],
        )
        got = (
            m["oneway"],
            m["returns"],
            [(a["id"], a["name"], a["type"], _default(a["default"])) for a in m["args"]],
            m["throws"],
        )
        if want != got:
            diffs.append(f"{name}:\n  ours {got}\n  hive {want}")
    assert not diffs, "\n".join(diffs)


def test_old_calls_hive_2_and_3_clients_send_are_served(ours: dict) -> None:
    methods = {m["name"]: m for m in ours["services"]["ThriftHiveMetastore"]["methods"]}
    assert [a["type"] for a in methods["get_table"]["args"]] == ["string", "string"]
    assert methods["get_table"]["returns"] == "Table"
    assert methods["get_table_objects_by_name"]["returns"] == "list<Table>"


def test_fb303_matches(facts: dict, ours_fb303: dict) -> None:
    ref = facts["included"]["fb303"]
    assert ours_fb303["enums"] == ref["enums"]
    mine = ours_fb303["services"]["FacebookService"]["methods"]
    assert [(m["name"], m["oneway"], m["returns"], m["args"], m["throws"]) for m in mine] == [
        (
            m["name"],
            m["oneway"],
            m["returns"],
            [{k: a[k] for k in ("id", "name", "type", "default")} for a in m["args"]],
            m["throws"],
        )
        for m in ref["services"]["FacebookService"]["methods"]
    ]


def test_loaded_module_is_the_checked_text(ours: dict) -> None:
    """thriftpy2's module has exactly the structs and fields the text declares."""
    for name, struct in ours["structs"].items():
        cls = getattr(hms, name)
        spec = {fid: entry[1] for fid, entry in cls.thrift_spec.items()}
        assert spec == {f["id"]: f["name"] for f in struct["fields"]}, name
        required = {fid for fid, entry in cls.thrift_spec.items() if entry[-1] is True}
        assert required == {f["id"] for f in struct["fields"] if f["required"] == "required"}, name
    services = set(hms.ThriftHiveMetastore.thrift_services)
    assert {m["name"] for m in ours["services"]["ThriftHiveMetastore"]["methods"]} <= services


def test_reader_tells_optional_from_default() -> None:
    """The checker itself must see requiredness, or the comparison above proves nothing."""
    from tests.support.idl_text import _Reader, tokenize

    r = _Reader(tokenize("1: optional i64 a = -1, 2: string b, 3: required list<X> c }"))
    assert [(f["required"], f["default"]) for f in r.fields("}")] == [
        ("optional", -1),
        ("default", None),
        ("required", None),
    ]
