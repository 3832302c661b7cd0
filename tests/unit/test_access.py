"""Every call the handler implements is classified for read-only mode and for allow-lists, so
a new method cannot slip past either unnoticed."""

from __future__ import annotations

from types import SimpleNamespace

from hms_cache_proxy.handler import Handler, access
from hms_cache_proxy.idl import service


def _implemented() -> list[str]:
    return [n for n in service.thrift_services if hasattr(Handler, n)]


def test_every_implemented_call_is_classified() -> None:
    assert access.unclassified(_implemented()) == {"read_only": [], "allow_list": []}


def test_classification_catches_an_unlisted_method() -> None:
    out = access.unclassified(
        _implemented(),
        write=access.WRITE_CALLS - {"create_table"},
        global_calls=access.GLOBAL_CALLS - {"open_txns"} | {"get_table"},
    )
    assert out == {"read_only": ["create_table"], "allow_list": ["get_table", "open_txns"]}


def test_the_lists_name_only_real_calls() -> None:
    calls = set(service.thrift_services)
    lists = (access.WRITE_CALLS, access.READ_CALLS, access.GLOBAL_CALLS, access.FILTERED_CALLS)
    for names in lists:
        assert names <= calls, sorted(names - calls)


def test_nothing_configured_returns_the_handler_itself() -> None:
    handler = object()
    settings = SimpleNamespace(
        read_only=False, allowed_databases=[".*"], allowed_databases_by_user={}
    )
    assert access.guard(handler, settings) is handler


def test_database_names_are_found_in_nested_arguments() -> None:
    from hms_cache_proxy.idl import hms

    spec = service.update_table_column_statistics_req_args.thrift_spec[1]
    req = hms.SetPartitionsStatsRequest(
        colStats=[hms.ColumnStatistics(statsDesc=hms.ColumnStatisticsDesc(dbName="deep"))]
    )
    assert list(access._db_names("update_table_column_statistics_req", spec, req, 0)) == ["deep"]
