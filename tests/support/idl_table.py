"""The table of every IDL method in docs/compatibility.md: served or not, and for each one not
served why and what a client sees. tests/unit/test_idl_table.py checks the document against
the IDL (the method list, read from the IDL text) and the Handler (the "served" column).

Regenerate the table after adding or removing handler methods (a reason is needed for every
method not served; ``NOT_SERVED`` below):

    .venv/bin/python -m tests.support.idl_table --write     # rewrite the block in the doc
    .venv/bin/python -m tests.support.idl_table             # print the rows
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.idl_text import read_idl

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
START = "<!-- idl-table:start (generated: python -m tests.support.idl_table --write) -->"
END = "<!-- idl-table:end -->"

UNKNOWN = (
    "`TApplicationException(UNKNOWN_METHOD, \"Invalid method name: '<name>'\")`; the "
    "connection stays usable"
)

_REASONS: dict[str, tuple[str, str]] = {
    # key: (reason, methods)
    "connector": (
        "Hive 4 data connectors (remote databases over JDBC): no remote databases are served",
        "create_dataconnector get_dataconnector_req drop_dataconnector get_dataconnectors "
        "alter_dataconnector",
    ),
    "types": (
        "Hive's TYPES objects: unused by Hive itself and by the target engines",
        "get_type create_type drop_type get_type_all",
    ),
    "tokens": (
        "Hadoop delegation tokens and their master keys: no Kerberos here (SASL PLAIN or none)",
        "get_delegation_token renew_delegation_token cancel_delegation_token add_token "
        "remove_token get_token get_all_token_identifiers add_master_key update_master_key "
        "remove_master_key get_master_keys",
    ),
    "transformer": (
        "MetastoreDefaultTransformer is not applied (see Policy), so there is nothing to dry-run",
        "translate_table_dryrun",
    ),
    "views": (
        "materialized-view rewriting metadata (CREATION_METADATA, rebuild locks): not implemented",
        "get_all_materialized_view_objects_for_rewriting get_materialized_views_for_rewriting "
        "update_creation_metadata "
        "get_lock_materialization_rebuild heartbeat_lock_materialization_rebuild",
    ),
    "properties": (
        "Hive 4's metastore property store: not implemented",
        "get_properties set_properties",
    ),
    "acid-stats": (
        "the write-id history of Hive 4 HiveServer2 (MIN_HISTORY_WRITE_ID): not implemented",
        "add_write_ids_to_min_history",
    ),
    "replication": (
        "not needed by REPL LOAD of transactional tables (served: replayed txns, "
        "repl_tbl_writeid_state); no change management (cm_recycle), no txn-id seeding, no "
        "replication metrics store",
        "seed_txn_id cm_recycle add_replication_metrics get_replication_metrics",
    ),
    "compactor-extras": (
        "compactor metrics (COMPACTION_METRICS_CACHE) and cleanup submission: not implemented; "
        "the queue calls a compactor needs are served",
        "submit_for_cleanup update_compaction_metrics_data remove_compaction_metrics_data",
    ),
    "file-metadata": (
        "the metastore's ORC file-footer cache: not implemented (Hive reads footers itself "
        "unless it is enabled)",
        "get_file_metadata_by_expr get_file_metadata put_file_metadata clear_file_metadata "
        "cache_file_metadata",
    ),
    "workload": (
        "Hive LLAP workload management (resource plans, triggers, pools, mappings): no target "
        "engine uses it",
        "create_resource_plan get_resource_plan get_active_resource_plan get_all_resource_plans "
        "alter_resource_plan validate_resource_plan drop_resource_plan create_wm_trigger "
        "alter_wm_trigger drop_wm_trigger get_triggers_for_resourceplan create_wm_pool "
        "alter_wm_pool drop_wm_pool create_or_update_wm_mapping drop_wm_mapping "
        "create_or_drop_wm_trigger_to_pool_mapping",
    ),
    "schema-registry": (
        "Hive's schema registry (ISCHEMA, SCHEMA_VERSION, named SerDes): no target engine uses it",
        "create_ischema alter_ischema get_ischema drop_ischema add_schema_version "
        "get_schema_version get_schema_latest_version get_schema_all_versions "
        "drop_schema_version get_schemas_by_cols map_schema_version_to_serde "
        "set_schema_version_state add_serde get_serde",
    ),
    "hplsql": (
        "HPL/SQL stored procedures and packages: not implemented",
        "create_stored_procedure get_stored_procedure drop_stored_procedure "
        "get_all_stored_procedures find_package add_package get_all_packages drop_package",
    ),
}

NOT_SERVED: dict[str, str] = {
    name: reason for reason, names in _REASONS.values() for name in names.split()
}
"""Why each method the Handler does not define is not served."""

SERVED_NOTES: dict[str, str] = {
    name: "served, but answers `UNKNOWN_METHOD` as if absent: the Kryo-serialized Hive "
    "expression cannot be evaluated here; Hive's clients then list names and prune themselves"
    for name in (
        "get_partitions_by_expr",
        "get_partitions_spec_by_expr",
        "get_partition_names_req",
    )
} | {
    "drop_partitions_req": "served; with `exprs` it answers `UNKNOWN_METHOD` (Kryo "
    "expressions), with names it drops",
    "add_partitions_pspec": "served as a MetaException (not supported)",
}
"""Served methods that refuse some or all requests (Deviations above says why)."""


def idl_methods() -> list[str]:
    """Every method of ThriftHiveMetastore and its base FacebookService, in IDL order, read
    from the IDL text (not from thriftpy2)."""
    from hms_cache_proxy.idl import idl_dir

    hms = read_idl(idl_dir() / "hive_metastore.thrift")["services"]["ThriftHiveMetastore"]
    fb303 = read_idl(idl_dir() / "fb303.thrift")["services"]["FacebookService"]
    return [m["name"] for m in hms["methods"]] + [m["name"] for m in fb303["methods"]]


def served_methods() -> set[str]:
    from hms_cache_proxy.handler import Handler

    return {name for name in idl_methods() if callable(getattr(Handler, name, None))}


def expected_rows() -> list[str]:
    """The table's rows; raises KeyError naming a method not served without a reason."""
    served = served_methods()
    missing = [n for n in idl_methods() if n not in served and n not in NOT_SERVED]
    if missing:
        raise KeyError(f"no reason in tests/support/idl_table.py NOT_SERVED for: {missing}")
    stale = sorted(n for n in NOT_SERVED if n in served)
    if stale:
        raise KeyError(f"served now, drop their reason in tests/support/idl_table.py: {stale}")
    rows = ["| method | served | why not / limits | what a client sees |", "|---|---|---|---|"]
    for name in idl_methods():
        if name in served:
            note = SERVED_NOTES.get(name, "")
            rows.append(f"| `{name}` | yes | {note} | the answer |")
        else:
            rows.append(f"| `{name}` | no | {NOT_SERVED[name]} | {UNKNOWN} |")
    return rows


def document_rows(text: str) -> list[str]:
    """The rows between the markers of the document's text."""
    if START not in text or END not in text:
        raise ValueError(f"{DOC} lacks the markers {START!r} / {END!r}")
    block = text.split(START, 1)[1].split(END, 1)[0]
    return [line for line in block.strip().splitlines() if line.strip()]


def rewrite(text: str) -> str:
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    return head + START + "\n" + "\n".join(expected_rows()) + "\n" + END + tail


def main(argv: list[str]) -> int:
    if "--write" in argv:
        DOC.write_text(rewrite(DOC.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"rewrote the IDL table in {DOC}")
    else:
        print("\n".join(expected_rows()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
