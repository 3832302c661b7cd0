"""An ALTER_TABLE message read as plain JSON (what a sidecar needs of it) says what the full
decoding into Thrift objects says: the name before, and whether columns or keys changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.events.alter_summary import summarize
from tests.support.metastore import cols, table


def _before() -> Any:
    t = table(hms, "sales", "orders", keys=["day:string"], params={"k": "v"})
    t.catName = "hive"
    return t


def _summary(after: Any, fmt: str = messages.DEFAULT_FORMAT) -> tuple[Any, ...]:
    s = summarize(messages.encode(messages.alter_table(_before(), after), fmt), fmt)
    return s.cat_before, s.db_before, s.table_before, s.columns_changed


@pytest.mark.parametrize("fmt", [messages.DEFAULT_FORMAT, "json-0.2"])
def test_the_name_before_and_whether_columns_or_keys_changed(fmt: str) -> None:
    params = copy.deepcopy(_before())
    params.parameters["k"] = "w"
    assert _summary(params, fmt) == ("hive", "sales", "orders", False)
    renamed = copy.deepcopy(_before())
    renamed.tableName, renamed.dbName = "orders2", "archive"
    assert _summary(renamed, fmt) == ("hive", "sales", "orders", False)
    column = copy.deepcopy(_before())
    column.sd.cols = cols(hms, "a:int", "b:bigint")
    assert _summary(column, fmt)[3] is True
    key = copy.deepcopy(_before())
    key.partitionKeys = cols(hms, "day:string", "hour:string")
    assert _summary(key, fmt)[3] is True
    comment = copy.deepcopy(_before())
    comment.sd.cols[0].comment = "now with a comment"
    assert _summary(comment, fmt)[3] is True


def test_tjson_that_is_not_plain_json_is_refused_for_the_full_decoding() -> None:
    skewed = _before()
    skewed.sd.skewedInfo = hms.SkewedInfo(
        skewedColNames=["a"], skewedColValues=[["1"]], skewedColValueLocationMaps={("1",): "x"}
    )
    message = messages.encode(messages.alter_table(skewed, skewed))
    with pytest.raises(ValueError):
        summarize(message, messages.DEFAULT_FORMAT)
    with pytest.raises(ValueError):
        summarize("{not json", "json-0.2")
