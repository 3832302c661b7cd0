"""docs/compatibility.md lists every IDL method, served or not, and cannot go stale: the rows
are compared with the IDL text's methods and the "served" column with the Handler. Regenerate
with ``python -m tests.support.idl_table --write`` (tests/support/idl_table.py)."""

from __future__ import annotations

from tests.support import idl_table


def _doc_rows() -> list[str]:
    return idl_table.document_rows(idl_table.DOC.read_text(encoding="utf-8"))


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def test_the_table_has_one_row_per_idl_method_in_idl_order() -> None:
    methods = [_cells(r)[0].strip("`") for r in _doc_rows()[2:]]
    assert methods == idl_table.idl_methods()
    assert len(methods) == 288


def test_the_served_column_matches_the_handler() -> None:
    served = idl_table.served_methods()
    for row in _doc_rows()[2:]:
        name, column = _cells(row)[0].strip("`"), _cells(row)[1]
        assert column == ("yes" if name in served else "no"), name


def test_every_method_not_served_has_a_reason_and_the_table_is_current() -> None:
    assert _doc_rows() == idl_table.expected_rows(), (
        "regenerate: .venv/bin/python -m tests.support.idl_table --write"
    )


def test_the_reasons_name_only_idl_methods() -> None:
    assert set(idl_table.NOT_SERVED) <= set(idl_table.idl_methods())
    assert set(idl_table.SERVED_NOTES) <= idl_table.served_methods()
