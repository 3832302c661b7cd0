"""Hive's partition filter language: parsing, evaluation with Hive's semantics, pushdown.

Sources named in the cases (apache/hive, standalone-metastore/metastore-server/.../metastore/):
- "g4": parser/PartitionFilter.g4 and parser/PartFilterVisitor.java (Hive 4.0's grammar);
- "Filter.g": Hive 2.3/3's ANTLR3 grammar (metastore/src/java/.../parser/Filter.g);
- "TestPartFilterExprUtil": the Hive 4 unit test of the same parser (expected trees);
- "DirectSql": MetaStoreDirectSql.PartitionFilterGenerator (how a leaf becomes SQL);
- "ExpressionTree": parser/ExpressionTree.java (key lookup, JDO errors).
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hms_cache_proxy.store.partition_filter.binder import compile_filter, type_name
from hms_cache_proxy.store.partition_filter.parser import parse, to_text
from hms_cache_proxy.store.partition_filter.pushdown import KeyCondition, pushdown
from hms_cache_proxy.store.partition_filter.syntax_tree import (
    DEFAULT_PARTITION_NAME,
    And,
    Between,
    Comparison,
    FilterError,
    In,
    Literal,
    MatchAll,
    Node,
    Not,
    Or,
)

DEFAULT = DEFAULT_PARTITION_NAME


def s(value: str) -> Literal:
    return Literal("string", value)


def i(value: int) -> Literal:
    return Literal("int", value)


def cmp(key: str, op: str, value: Literal) -> Comparison:
    return Comparison(key, op, value)


def matching(
    text: str, keys: list[str], types: list[str], rows: list[list[str]]
) -> list[list[str]]:
    pred = compile_filter(parse(text), keys, types)
    return [row for row in rows if pred(row)]


def one_key(text: str, type_: str, values: list[str]) -> list[str]:
    """The values of a one-key table (key ``p``) that the filter selects."""
    pred = compile_filter(parse(text), ["p"], [type_])
    return [v for v in values if pred([v])]


# -- Grammar -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("p = 'a'", "="),
        ("p == 'a'", "="),  # g4: EQ : '=' | '=='
        ("p != 'a'", "<>"),
        ("p <> 'a'", "<>"),
        ("p < 'a'", "<"),
        ("p <= 'a'", "<="),
        ("p > 'a'", ">"),
        ("p >= 'a'", ">="),
        ("p LIKE 'a'", "LIKE"),
        ("p like 'a'", "LIKE"),
    ],
)
def test_every_comparison_operator(text: str, op: str) -> None:
    assert parse(text) == cmp("p", op, s("a"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # value op key is the same comparison seen from the key (Filter.g / g4 reverseComparison)
        ("'a' = p", cmp("p", "=", s("a"))),
        ("5 < p", cmp("p", ">", i(5))),
        ("5 <= p", cmp("p", ">=", i(5))),
        ("5 > p", cmp("p", "<", i(5))),
        ("5 >= p", cmp("p", "<=", i(5))),
        ("5 != p", cmp("p", "<>", i(5))),
        ("DATE '2024-01-31' <= p", cmp("p", ">=", Literal("date", "2024-01-31"))),
    ],
)
def test_literal_first_comparisons(text: str, expected: Node) -> None:
    assert parse(text) == expected


def test_value_like_key_is_rejected_as_hive_does() -> None:
    # ExpressionTree: "Value should be on the RHS for LIKE operator"
    with pytest.raises(FilterError, match="RHS for LIKE") as info:
        parse("'a%' like p")
    assert info.value.position == 5


def test_between_and_not_between() -> None:
    assert parse("p between 1 and 5") == Between("p", i(1), i(5))
    assert parse("p NOT BETWEEN 'a' AND 'c'") == Between("p", s("a"), s("c"), negated=True)
    # g4 allows a different kind of constant for each bound
    assert parse("p between 1 and '5'") == Between("p", i(1), s("5"))


@pytest.mark.parametrize(
    "text",
    ["(p) in ('a', 'b')", "(p) IN ('a','b')", "p in ('a', 'b')", "( p ) in ( 'a' , 'b' )"],
)
def test_in_with_and_without_parentheses_around_the_key(text: str) -> None:
    # g4 requires "(key) IN"; the bare form is accepted too
    assert parse(text) == In("p", (s("a"), s("b")))


def test_not_in() -> None:
    assert parse("(p) not in (1, 2)") == In("p", (i(1), i(2)), negated=True)
    assert parse("p NOT IN (1)") == In("p", (i(1),), negated=True)


def test_struct_in_expands_like_hive() -> None:
    # PartFilterVisitor.visitMultiColInExpression: OR of ANDs of '=' (NOT IN: AND of ORs of '!=')
    text = "(struct(a, b)) in (const struct('x', 1), struct('y', 2))"
    assert parse(text) == Or(
        (
            And((cmp("a", "=", s("x")), cmp("b", "=", i(1)))),
            And((cmp("a", "=", s("y")), cmp("b", "=", i(2)))),
        )
    )
    assert parse("(STRUCT(a,b)) NOT IN (STRUCT('x',1))") == Or(
        (cmp("a", "<>", s("x")), cmp("b", "<>", i(1)))
    )
    with pytest.raises(FilterError, match=r"Struct key \[a, b\] and value \[x\] sizes"):
        parse("(struct(a,b)) in (struct('x'))")


def test_in_example_from_hive_tests() -> None:
    # TestPartFilterExprUtil.testExpressionCombination
    assert parse("(a) in (10, 20) and a not between 10 and 15 and b < 10") == And(
        (
            In("a", (i(10), i(20))),
            Between("a", i(10), i(15), negated=True),
            cmp("b", "<", i(10)),
        )
    )


def test_keywords_are_case_insensitive_and_key_case_is_kept() -> None:
    assert parse("Dt = 'x' AnD hR = 1 oR NOT dt like 'y'") == Or(
        (
            And((cmp("Dt", "=", s("x")), cmp("hR", "=", i(1)))),
            Not(cmp("dt", "LIKE", s("y"))),
        )
    )


def test_keys() -> None:
    assert parse("_a_1 = 1") == cmp("_a_1", "=", i(1))
    assert parse("1a = 1") == cmp("1a", "=", i(1))  # g4 IDENTIFIER: (LETTER|DIGIT|'_')+
    assert parse("`my key` = 1") == cmp("my key", "=", i(1))
    assert parse("`a``b` = 1") == cmp("a`b", "=", i(1))
    # Hive 4 reserves DATE; back-quoting works there (TestPartFilterExprUtil), and where no
    # literal can follow, the bare word is a key here (as in Hive 2.3, which Spark targets).
    assert parse("`date` = '1990-11-10'") == cmp("date", "=", s("1990-11-10"))
    assert parse("date = '1990-11-10'") == cmp("date", "=", s("1990-11-10"))
    assert parse("(date) in ('a')") == In("date", (s("a"),))
    assert parse("timestamp >= 5 and struct = 'x'") == And(
        (cmp("timestamp", ">=", i(5)), cmp("struct", "=", s("x")))
    )


def test_string_literals_keep_backslashes_as_hive_does() -> None:
    # Hive only strips the outer quotes (TrimQuotes / unquoteString): escapes stay in the value.
    assert parse(r"p = 'a\'b'") == cmp("p", "=", s(r"a\'b"))
    assert parse(r'p = "a\"b"') == cmp("p", "=", s(r"a\"b"))
    assert parse(r"p = 'a\\b'") == cmp("p", "=", s(r"a\\b"))
    assert parse('p = "it\'s"') == cmp("p", "=", s("it's"))
    assert parse("p = 'say \"hi\"'") == cmp("p", "=", s('say "hi"'))
    assert parse("p = ''") == cmp("p", "=", s(""))
    assert parse("p = 'two\nlines'") == cmp("p", "=", s("two\nlines"))


def test_adjacent_strings_are_joined_hive_4s_way() -> None:
    # g4 constant: STRING+; the visitor unquotes the joined source text
    assert parse("p = 'a' 'b'") == cmp("p", "=", s("a''b"))
    assert parse("p = 'a' \"b\"") == cmp("p", "=", s("'a'\"b\""))


def test_sql_looking_text_is_just_a_value() -> None:
    node = parse('dt = "x\' OR 1=1 --"')
    assert node == cmp("dt", "=", s("x' OR 1=1 --"))
    rows = [["x' OR 1=1 --"], ["x"], ["anything"]]
    assert matching('dt = "x\' OR 1=1 --"', ["dt"], ["string"], rows) == [["x' OR 1=1 --"]]
    node = parse("dt = 'a; DROP TABLE PARTITIONS; --'")
    assert node == cmp("dt", "=", s("a; DROP TABLE PARTITIONS; --"))


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("p = 5", i(5)),
        ("p = -5", i(-5)),
        ("p = - 5", i(-5)),  # g4: MINUS? INTEGER_VALUE, two tokens
        ("p = 007", i(7)),
        ("p = 9223372036854775807", i(2**63 - 1)),
        ("p = -9223372036854775808", i(-(2**63))),
        ("p = 2024-01-31", Literal("date", "2024-01-31")),
        ("p = DATE '2024-01-31'", Literal("date", "2024-01-31")),
        ('p = date "2024-01-31"', Literal("date", "2024-01-31")),
        ("p = 2024-01-31 23:59:59", Literal("timestamp", "2024-01-31 23:59:59")),
        ("p = TIMESTAMP '2024-01-31 23:59:59'", Literal("timestamp", "2024-01-31 23:59:59")),
    ],
)
def test_literals(text: str, literal: Literal) -> None:
    assert parse(text) == cmp("p", "=", literal)


def test_date_literals_in_lists_and_between() -> None:
    # TestPartFilterExprUtil: unquoted dates and timestamps in IN lists and BETWEEN
    assert parse("(j) in (1990-11-10, 1990-11-11)") == In(
        "j", (Literal("date", "1990-11-10"), Literal("date", "1990-11-11"))
    )
    assert parse("dt BETWEEN 2000-01-01 01:00:00 AND 2000-01-01 01:42:00") == Between(
        "dt",
        Literal("timestamp", "2000-01-01 01:00:00"),
        Literal("timestamp", "2000-01-01 01:42:00"),
    )


def test_empty_filter_matches_everything() -> None:
    # ObjectStore: a null or empty filter is ExpressionTree.EMPTY_TREE
    assert parse("") == MatchAll()
    assert parse(None) == MatchAll()
    pred = compile_filter(parse(""), ["p"], ["string"])
    assert pred(["x"]) and pred([DEFAULT])
    assert pushdown(parse(""), ["p"], ["string"]) == []


# -- Precedence -------------------------------------------------------------------------------


def test_and_binds_tighter_than_or() -> None:
    a, b, c = (cmp(k, "=", i(1)) for k in "abc")
    assert parse("a = 1 or b = 1 and c = 1") == Or((a, And((b, c))))
    assert parse("a = 1 and b = 1 or c = 1") == Or((And((a, b)), c))
    assert parse("(a = 1 or b = 1) and c = 1") == And((Or((a, b)), c))


def test_not_binds_tighter_than_and() -> None:
    a, b = cmp("a", "=", i(1)), cmp("b", "=", i(1))
    assert parse("not a = 1 and b = 1") == And((Not(a), b))
    assert parse("not (a = 1 and b = 1)") == Not(And((a, b)))
    assert parse("not not a = 1") == Not(Not(a))
    assert parse("not a = 1 or b = 1") == Or((Not(a), b))


def test_precedence_example_from_hive_tests() -> None:
    # TestPartFilterExprUtil.testAndOrPrecedence: "dt=10 or dt=20 and dt=30 and dt=40 or dt=50
    # or dt=60 and dt=70" is ((10 OR (20 AND 30 AND 40)) OR 50) OR (60 AND 70).
    d = {n: cmp("dt", "=", i(n)) for n in (10, 20, 30, 40, 50, 60, 70)}
    assert parse("dt=10 or dt=20 and dt=30 and dt=40 or dt=50 or dt=60 and dt=70") == Or(
        (d[10], And((d[20], d[30], d[40])), d[50], And((d[60], d[70])))
    )
    assert parse("(dt=10 or dt=20) and dt=30 and ((dt=40 or dt=50) or dt=60) and dt=70") == And(
        (Or((d[10], d[20])), d[30], Or((d[40], d[50], d[60])), d[70])
    )


def test_precedence_decides_the_result() -> None:
    rows = [[a, b, c] for a in "xy" for b in "xy" for c in "xy"]
    keys, types = ["a", "b", "c"], ["string"] * 3
    got = matching("a = 'x' or b = 'x' and c = 'x'", keys, types, rows)
    assert got == [r for r in rows if r[0] == "x" or (r[1] == "x" and r[2] == "x")]
    got = matching("not a = 'x' and b = 'x'", keys, types, rows)
    assert got == [r for r in rows if r[0] != "x" and r[1] == "x"]


# -- Errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("dt = and", 5, "expected a value"),
        ("dt =", 4, "found end of filter"),
        ("= 'x'", 0, "expected a partition key"),
        ("dt 'x'", 3, "expected a comparison operator"),
        ("dt = 'x' dt = 'y'", 9, "expected AND, OR or the end"),
        ("dt = 'x' or", 11, "expected a partition key"),
        ("(dt = 'x'", 9, "expected ')' to close the '(' at position 0"),
        ("dt = 'x')", 8, "expected AND, OR or the end"),
        ("dt = 'abc", 5, "unterminated string literal"),
        ("`dt = 1", 0, "unterminated quoted identifier"),
        ("dt = 1.5", 5, "decimal literals are not supported"),
        ("dt ! 1", 3, "unexpected character '!'"),
        ("dt = 1 ; drop", 7, "unexpected character ';'"),
        ("dt <=> 1", 3, "Unsupported comparison operator: <=>"),
        ("dt = 2023-06-32", 5, "invalid date '2023-06-32'"),
        ("dt = DATE '2023-02-30'", 10, "invalid date"),
        ("dt = TIMESTAMP '2023-06-02 99:35:00'", 15, "invalid timestamp"),
        ("dt = 99999999999999999999", 5, "out of range"),
        ("dt between 1 5", 13, "expected AND between the bounds"),
        ("dt not = 1", 7, "expected BETWEEN, IN or LIKE"),
        ("(dt) in 1", 8, "expected '(' after IN"),
        ("(dt) in (1 2)", 11, "expected ',' or ')' in the IN list"),
        ("dt = -'a'", 6, "expected digits after '-'"),
        ("   ", 3, "expected a partition key"),
        ("not", 3, "expected a partition key"),
        ("dt = abc", 5, "expected a value"),
    ],
)
def test_error_positions(text: str, position: int, fragment: str) -> None:
    with pytest.raises(FilterError) as info:
        parse(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.position == position, str(err)
    assert fragment in err.message
    assert str(err).startswith(f"Error parsing partition filter at position {position}: ")
    assert str(err).endswith(f" in '{text}'")


def test_error_message_format() -> None:
    with pytest.raises(FilterError) as info:
        parse("dt = and")
    assert str(info.value) == (
        "Error parsing partition filter at position 5: expected a value (a quoted string, an "
        "integer, a date or a timestamp) after '=', found 'and' in 'dt = and'"
    )
    copy = pickle.loads(pickle.dumps(info.value))
    assert str(copy) == str(info.value) and copy.position == 5


def test_unknown_key_names_the_key_and_the_tables_keys() -> None:
    # ExpressionTree.getPartColIndexForFilter: "Specified key <k> is not a partitioning key"
    with pytest.raises(FilterError) as info:
        compile_filter(parse("dt = 'x' and hour = 1"), ["dt", "hr"], ["string", "int"])
    assert info.value.position == 13
    assert "Specified key <hour> is not a partitioning key for the table" in str(info.value)
    assert "dt, hr" in str(info.value)
    assert str(info.value).startswith("Invalid partition filter at position 13")
    with pytest.raises(FilterError, match="has no partition keys"):
        compile_filter(parse("dt = 'x'"), [], [])
    with pytest.raises(FilterError, match="hour"):
        pushdown(parse("hour = 1"), ["dt"], ["string"])


def test_keys_match_case_insensitively() -> None:
    # equalsIgnoreCase in getPartColIndexForFilter
    rows = [["a", "1"], ["b", "2"]]
    assert matching("DT = 'a'", ["dt", "hr"], ["string", "int"], rows) == [["a", "1"]]
    assert matching("Hr > 1", ["DT", "HR"], ["STRING", "INT"], rows) == [["b", "2"]]


# -- Types ------------------------------------------------------------------------------------


def test_type_name() -> None:
    # ColumnType.getTypeName
    assert type_name("varchar(10)") == "varchar"
    assert type_name("CHAR(3)") == "char"
    assert type_name("integer") == "int"
    assert type_name("decimal(10,2)") == "decimal"
    assert type_name("numeric(3)") == "decimal"
    assert type_name("string") == "string"


@pytest.mark.parametrize("type_", ["string", "varchar(10)", "char(3)", "STRING"])
def test_string_keys_compare_as_strings(type_: str) -> None:
    values = ["10", "9", "a", "B", "", DEFAULT]
    assert one_key("p = '10'", type_, values) == ["10"]
    assert one_key("p <> '10'", type_, values) == ["9", "a", "B", "", DEFAULT]
    assert one_key("p > '9'", type_, values) == ["a", "B", DEFAULT]  # code-point order
    assert one_key("p < '9'", type_, values) == ["10", ""]
    assert one_key("p >= 'a'", type_, values) == ["a"]
    assert one_key("p <= ''", type_, values) == [""]
    assert one_key("'9' < p", type_, values) == ["a", "B", DEFAULT]
    # the default partition is an ordinary string for string keys (no case-when in DirectSql)
    assert one_key(f"p = '{DEFAULT}'", type_, values) == [DEFAULT]
    assert one_key("p between '1' and '9'", type_, values) == ["10", "9"]
    assert one_key("p not between '1' and '9'", type_, values) == ["a", "B", "", DEFAULT]
    assert one_key("p in ('a', 'B', 'z')", type_, values) == ["a", "B"]
    assert one_key("(p) not in ('a', 'B', 'z')", type_, values) == ["10", "9", "", DEFAULT]


def test_date_and_timestamp_literals_compare_as_strings_on_string_keys() -> None:
    # Hive 4's visitor returns date/timestamp literals as String; Hive 2.3 JDO formats them
    values = ["2024-01-31", "2024-1-31", "2024-02-01"]
    assert one_key("p = 2024-01-31", "string", values) == ["2024-01-31"]
    assert one_key("p >= DATE '2024-01-31'", "string", values) == values
    assert one_key("p = TIMESTAMP '2024-01-31 00:00:00'", "string", values) == []


def test_integral_keys_compare_numerically() -> None:
    # DirectSql: cast(PART_KEY_VAL as decimal(21,0)), the default partition as NULL
    values = ["5", "05", "+5", " 5 ", "5.4", "5.5", "-5", "10", "1e1", "abc", "", DEFAULT]
    for type_ in ("tinyint", "smallint", "int", "bigint", "INT", "integer"):
        assert one_key("p = 5", type_, values) == ["5", "05", "+5", " 5 ", "5.4"]
        assert one_key("p = 6", type_, values) == ["5.5"]  # rounded half away from zero
        assert one_key("p > 5", type_, values) == ["5.5", "10", "1e1"]  # 10 > 5, not '10' < '5'
        assert one_key("p < 0", type_, values) == ["-5"]
        assert one_key("p <> 5", type_, values) == ["5.5", "-5", "10", "1e1"]
        assert one_key("p = -5", type_, values) == ["-5"]
        assert one_key("5 < p", type_, values) == ["5.5", "10", "1e1"]
        assert one_key("p between 5 and 6", type_, values) == [
            "5",
            "05",
            "+5",
            " 5 ",
            "5.4",
            "5.5",
        ]
        assert one_key("(p) in (10, -5)", type_, values) == ["-5", "10", "1e1"]
        assert one_key("(p) not in (5, 10)", type_, values) == ["5.5", "-5"]


def test_default_partition_on_typed_keys() -> None:
    values = ["1", "7", DEFAULT]
    # NULL: matched by no comparison, nor by its negation (NOT of unknown is unknown)
    assert one_key("p > 5", "int", values) == ["7"]
    assert one_key("not p > 5", "int", values) == ["1"]
    assert one_key("p <> 1", "int", values) == ["7"]
    assert one_key("p not between 2 and 3", "int", values) == ["1", "7"]
    assert one_key("not (p > 5 or p < 5)", "int", values) == []
    # ... but compared with the default name itself it is a string (DirectSql isDefaultPartition)
    assert one_key(f"p = '{DEFAULT}'", "int", values) == [DEFAULT]
    assert one_key(f"p <> '{DEFAULT}'", "int", values) == ["1", "7"]
    assert one_key(f"p = '{DEFAULT}' or p > 5", "int", values) == ["7", DEFAULT]
    assert one_key(f"(p) in ('{DEFAULT}', 1)", "int", values) == ["1", DEFAULT]
    assert one_key(f"p = '{DEFAULT}'", "date", ["2024-01-01", DEFAULT]) == [DEFAULT]


def test_configured_default_partition_name() -> None:
    pred = compile_filter(parse("p < 5"), ["p"], ["int"], default_partition_name="-1")
    assert [v for v in ["-1", "-2", "7"] if pred([v])] == ["-2"]
    pred = compile_filter(parse("p = '-1'"), ["p"], ["int"], default_partition_name="-1")
    assert pred(["-1"]) and not pred(["-2"])


def test_mismatched_literal_types_are_rejected() -> None:
    # DirectSql: "Cannot push down filter for ... column and value ..."; the JDO fallback then
    # rejects every non-string key ("Filtering is supported only on partition keys of type
    # string"), so a Hive server answers MetaException.
    with pytest.raises(FilterError, match="Cannot compare partition key <p> of type string"):
        compile_filter(parse("p = 5"), ["p"], ["string"])
    with pytest.raises(FilterError, match="quote the value") as info:
        compile_filter(parse("p in ('a', 5)"), ["p"], ["string"])
    assert info.value.syntax is False
    with pytest.raises(FilterError, match="of type int with '5'"):
        compile_filter(parse("p = '5'"), ["p"], ["int"])
    with pytest.raises(FilterError, match="of type bigint with '2024-01-01'"):
        compile_filter(parse("p > 2024-01-01"), ["p"], ["bigint"])
    with pytest.raises(FilterError, match="of type date with the integer 20240101"):
        compile_filter(parse("p = 20240101"), ["p"], ["date"])
    with pytest.raises(FilterError, match=r"expected a date \(yyyy-MM-dd\)"):
        compile_filter(parse("p = '2024-1-5'"), ["p"], ["date"])


@pytest.mark.parametrize(
    "type_", ["decimal(10,2)", "boolean", "double", "float", "binary", "array<string>"]
)
def test_unsupported_key_types_are_rejected(type_: str) -> None:
    with pytest.raises(FilterError, match="Filtering is not supported on partition key <p>"):
        compile_filter(parse("p = '1'"), ["p"], [type_])


def test_date_keys_compare_as_dates() -> None:
    values = ["2024-01-05", "2024-1-5", "2024-01-05 10:00:00", "2024-01-06", "bad", DEFAULT]
    assert one_key("p = '2024-01-05'", "date", values) == values[:3]
    assert one_key("p = 2024-01-05", "date", values) == values[:3]
    assert one_key("p = DATE '2024-01-05'", "date", values) == values[:3]
    assert one_key("p > '2024-01-05'", "date", values) == ["2024-01-06"]
    assert one_key("p <> '2024-01-05'", "date", values) == ["2024-01-06"]
    assert one_key("(p) in (2024-01-06, 2024-01-07)", "date", values) == ["2024-01-06"]
    assert one_key("p between '2024-01-01' and '2024-12-31'", "date", values) == values[:4]


def test_timestamp_keys_compare_as_timestamps() -> None:
    values = [
        "2024-01-05 10:00:00",
        "2024-01-05 10:00:00.000",
        "2024-1-5 10:00",
        "2024-01-05T10:00:01",
        "2024-01-05",
        "bad",
        DEFAULT,
    ]
    assert one_key("p = '2024-01-05 10:00:00'", "timestamp", values) == values[:3]
    assert one_key("p > 2024-01-05 10:00:00", "timestamp", values) == ["2024-01-05T10:00:01"]
    assert one_key("p < TIMESTAMP '2024-01-05 10:00:00'", "timestamp", values) == ["2024-01-05"]
    with pytest.raises(FilterError, match="expected a timestamp"):
        compile_filter(parse("p = '2024-01-05'"), ["p"], ["timestamp"])


# -- LIKE -------------------------------------------------------------------------------------

LIKE_VALUES = ["abc", "abd", "ab", "xabc", "a_c", "a%c", "a.c", "ABC", "a\nc", "a\\c", ""]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # SQL LIKE with ESCAPE '\' (HIVE-22900 direct SQL; PostgreSQL semantics)
        ("abc", ["abc"]),
        ("ab%", ["abc", "abd", "ab"]),
        ("%bc", ["abc", "xabc"]),
        ("%b%", ["abc", "abd", "ab", "xabc"]),
        ("a_c", ["abc", "a_c", "a%c", "a.c", "a\nc", "a\\c"]),
        ("a%c", ["abc", "a_c", "a%c", "a.c", "a\nc", "a\\c"]),
        ("_", []),
        ("__", ["ab"]),
        ("%", LIKE_VALUES),
        ("%%", LIKE_VALUES),
        ("", [""]),
        (r"a\_c", ["a_c"]),
        (r"a\%c", ["a%c"]),
        (r"a\\c", ["a\\c"]),
        (r"\a\b\c", ["abc"]),  # an escaped ordinary character is itself
        ("a.c", ["a.c"]),  # not a regular expression (Hive 2.3's JDO path used one)
        ("a.*", []),
        ("[ab]bc", []),
        ("A%", ["ABC"]),  # case-sensitive
        ("x%c", ["xabc"]),
        ("%a%c%", ["abc", "xabc", "a_c", "a%c", "a.c", "a\nc", "a\\c"]),
        ("a_%", ["abc", "abd", "ab", "a_c", "a%c", "a.c", "a\nc", "a\\c"]),
    ],
)
def test_like_is_sql_like(pattern: str, expected: list[str]) -> None:
    quoted = "'" + pattern.replace("'", "\\'") + "'"
    assert one_key(f"p like {quoted}", "string", LIKE_VALUES) == expected
    negated = [v for v in LIKE_VALUES if v not in expected]
    assert one_key(f"p not like {quoted}", "string", LIKE_VALUES) == negated
    assert one_key(f"not p like {quoted}", "string", LIKE_VALUES) == negated


def test_like_errors() -> None:
    # A filter's own lexing pairs backslashes the way LIKE does, so only a constructed tree
    # can end a pattern in a lone escape; PostgreSQL rejects such a pattern.
    with pytest.raises(FilterError, match="must not end with escape character"):
        compile_filter(cmp("p", "LIKE", s("ab\\")), ["p"], ["string"])
    with pytest.raises(FilterError, match="LIKE is supported on string keys only"):
        compile_filter(parse("p like '1%'"), ["p"], ["int"])
    with pytest.raises(FilterError, match="LIKE is supported on string keys only"):
        compile_filter(parse("p like '2024%'"), ["p"], ["date"])
    with pytest.raises(FilterError, match="LIKE is supported on string keys only"):
        compile_filter(parse("p like 1"), ["p"], ["int"])


def test_like_with_the_default_name_on_an_integral_key_is_a_string_match() -> None:
    assert one_key(f"p like '{DEFAULT}'", "int", ["1", DEFAULT]) == [DEFAULT]


# -- Multi-key evaluation ---------------------------------------------------------------------


def test_filters_over_several_keys() -> None:
    keys, types = ["dt", "hr", "country"], ["string", "int", "varchar(2)"]
    rows = [
        [dt, hr, c]
        for dt in ("2024-01-01", "2024-01-02")
        for hr in ("0", "12", DEFAULT)
        for c in ("us", "de")
    ]
    got = matching('dt = "2024-01-02" and hr >= 12 and country like "d%"', keys, types, rows)
    assert got == [["2024-01-02", "12", "de"]]
    got = matching("(dt = '2024-01-01' or hr = 0) and not country = 'us'", keys, types, rows)
    assert got == [r for r in rows if (r[0] == "2024-01-01" or r[1] == "0") and r[2] != "us"]
    got = matching("(struct(dt, hr)) in (struct('2024-01-01', 12))", keys, types, rows)
    assert got == [["2024-01-01", "12", "us"], ["2024-01-01", "12", "de"]]
    got = matching("(struct(dt, hr)) not in (struct('2024-01-01', 12))", keys, types, rows)
    # the default partition's hr is NULL: '!=' is unknown, so dt must differ
    assert got == [r for r in rows if r[0] != "2024-01-01" or (r[1] != "12" and r[1] != DEFAULT)]


def test_predicate_accepts_lists_and_tuples() -> None:
    pred = compile_filter(parse("a = 'x' and b = 1"), ["a", "b"], ["string", "int"])
    assert pred(["x", "1"]) and pred(("x", "01")) and not pred(("y", "1"))


# -- Pushdown ---------------------------------------------------------------------------------

PK = ["s", "t", "n", "d"]
PT = ["string", "varchar(8)", "int", "date"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s = 'a'", [KeyCondition(0, ("a",))]),
        ("'a' = s", [KeyCondition(0, ("a",))]),
        ("s = 'a' and t = 'b'", [KeyCondition(0, ("a",)), KeyCondition(1, ("b",))]),
        ("(s) in ('b', 'a', 'b')", [KeyCondition(0, ("a", "b"))]),
        ("s = 'a' or s = 'b'", [KeyCondition(0, ("a", "b"))]),
        ("(s = 'a' or s = 'b') and (s) in ('b', 'c')", [KeyCondition(0, ("b",))]),
        ("s = 'a' and s = 'b'", [KeyCondition(0, ())]),  # nothing can match
        ("s = 'a' and (t = 'x' or n = 1)", [KeyCondition(0, ("a",))]),
        ("(s = 'a' and t = 'x') or (s = 'b' and n = 1)", [KeyCondition(0, ("a", "b"))]),
        ("not s <> 'a'", [KeyCondition(0, ("a",))]),
        ("not (s <> 'a' or t <> 'b')", [KeyCondition(0, ("a",)), KeyCondition(1, ("b",))]),
        ("(s) not in ('a')", []),
        ("not (s) not in ('a', 'b')", [KeyCondition(0, ("a", "b"))]),
        ("s like 'abc'", [KeyCondition(0, ("abc",))]),
        ("s like 'a\\_c'", [KeyCondition(0, ("a_c",))]),
        ("s like 'a%'", []),
        ("s = 'a' or t = 'b'", []),
        ("s <> 'a'", []),
        ("s >= 'a' and s <= 'a'", []),
        ("s between 'a' and 'a'", []),
        # typed comparisons never: '05' = 5, '2024-1-5' = DATE '2024-01-05'
        ("n = 5", []),
        ("(n) in (1, 2)", []),
        ("d = '2024-01-05'", []),
        # ... except a comparison with the default partition name, which is a string one
        (f"n = '{DEFAULT}'", [KeyCondition(2, (DEFAULT,))]),
        (f"(n) in ('{DEFAULT}', 1)", []),
        ("", []),
    ],
)
def test_pushdown_examples(text: str, expected: list[KeyCondition]) -> None:
    assert pushdown(parse(text), PK, PT) == expected


# A random-filter model over four keys. The values include what Hive treats specially: the
# default partition, numbers that are equal but not the same text, dates in two spellings,
# values that are neither numbers nor dates.
STRING_VALUES = ["a", "b", "c", "ab", "", DEFAULT]
INT_VALUES = ["1", "01", "2", "-1", " 2", "x", DEFAULT]
DATE_VALUES = ["2024-01-01", "2024-1-1", "2024-01-02", "bad", DEFAULT]
ROW = st.tuples(
    st.sampled_from(STRING_VALUES),
    st.sampled_from(STRING_VALUES),
    st.sampled_from(INT_VALUES),
    st.sampled_from(DATE_VALUES),
).map(list)

string_literals = st.sampled_from(["a", "b", "ab", "", DEFAULT]).map(s)
like_literals = st.sampled_from(["a%", "%b", "_", "a_", "%", "ab", "a\\%", ""]).map(s)
int_literals = st.sampled_from([-1, 0, 1, 2, 3]).map(i) | st.just(s(DEFAULT))
date_literals = st.sampled_from(["2024-01-01", "2024-01-02"]).map(
    lambda v: Literal("date", v)
) | st.just(s(DEFAULT))
ORDER_OPS = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _key_leaves(key: str, literals: st.SearchStrategy[Literal], like: bool) -> st.SearchStrategy:
    ops = (ORDER_OPS | st.just("LIKE")) if like else ORDER_OPS
    comparison = st.builds(
        lambda op, lit, lk: Comparison(key, op, lk if op == "LIKE" else lit),
        ops,
        literals,
        like_literals,
    )
    in_list = st.builds(
        lambda vals, neg: In(key, tuple(vals), neg),
        st.lists(literals, min_size=1, max_size=3),
        st.booleans(),
    )
    between = st.builds(
        lambda lo, hi, neg: Between(key, lo, hi, neg), literals, literals, st.booleans()
    )
    return comparison | in_list | between


LEAVES = (
    _key_leaves("s", string_literals, True)
    | _key_leaves("T", string_literals, True)
    | _key_leaves("n", int_literals, False)
    | _key_leaves("d", date_literals, False)
)
FILTERS = st.recursive(
    LEAVES,
    lambda inner: (
        st.builds(Not, inner)
        | st.lists(inner, min_size=2, max_size=3).map(lambda xs: And(tuple(xs)))
        | st.lists(inner, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs)))
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FILTERS, st.lists(ROW, min_size=1, max_size=40))
def test_pushdown_never_excludes_a_matching_partition(node: Node, rows: list[list[str]]) -> None:
    pred = compile_filter(node, PK, PT)
    conditions = pushdown(node, PK, PT)
    for row in rows:
        if pred(row):
            for cond in conditions:
                assert row[cond.key_index] in cond.values, (to_text(node), row, cond)


@settings(max_examples=300, deadline=None)
@given(FILTERS, st.lists(ROW, min_size=1, max_size=20))
def test_negation_is_sql_three_valued(node: Node, rows: list[list[str]]) -> None:
    # NOT never selects a partition the filter selects; on string keys (no NULLs) it is the
    # exact complement.
    pred, neg = compile_filter(node, PK, PT), compile_filter(Not(node), PK, PT)
    for row in rows:
        assert not (pred(row) and neg(row))
    strings_only = compile_filter(node, PK, ["string"] * 4) if _only_string_keys(node) else None
    if strings_only is not None:
        negated = compile_filter(Not(node), PK, ["string"] * 4)
        for row in rows:
            assert strings_only(row) != negated(row)


def _only_string_keys(node: Node) -> bool:
    if isinstance(node, (And, Or)):
        return all(_only_string_keys(item) for item in node.items)
    if isinstance(node, Not):
        return _only_string_keys(node.item)
    if isinstance(node, Comparison | Between | In):
        literals = (
            [node.value]
            if isinstance(node, Comparison)
            else [node.low, node.high]
            if isinstance(node, Between)
            else list(node.values)
        )
        return node.key.lower() in ("s", "t") and all(lit.kind == "string" for lit in literals)
    return True


@settings(max_examples=300, deadline=None)
@given(FILTERS)
def test_to_text_parses_back_to_the_same_meaning(node: Node) -> None:
    text = to_text(node)
    again = parse(text)  # the same tree, up to AND/OR flattening
    assert parse(to_text(again)) == again
    rows = [
        [a, b, c, d]
        for a in STRING_VALUES[:3]
        for b in ("a", "")
        for c in INT_VALUES[:4]
        for d in DATE_VALUES[:3]
    ]
    pred, pred_again = compile_filter(node, PK, PT), compile_filter(again, PK, PT)
    assert [r for r in rows if pred(r)] == [r for r in rows if pred_again(r)]


def test_to_text_of_strings_hive_cannot_express() -> None:
    assert to_text(cmp("p", "=", s("it's"))) == 'p = "it\'s"'
    assert to_text(cmp("p", "=", s('say "x"'))) == "p = 'say \"x\"'"
    with pytest.raises(ValueError, match="cannot be written"):
        to_text(cmp("p", "=", s("both ' and \"")))
    with pytest.raises(ValueError, match="cannot be written"):
        to_text(cmp("p", "=", s("ends in \\")))
