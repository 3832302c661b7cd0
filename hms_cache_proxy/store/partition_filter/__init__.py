"""Hive's partition filter language: get_partitions_by_filter and get_num_partitions_by_filter.

Clients send text such as ``dt = "2024-01-01"`` (Spark), ``a > 5 and b like "x%"`` or
``(p) in ("a", "b")``. ``parse`` turns it into a small immutable AST, ``compile_filter`` binds
the AST to a table's partition keys and returns a predicate over one partition's values (nested
closures, built once, called for each of possibly 10,000 cached partitions), and ``pushdown``
extracts the key/value conditions a database query may use to narrow its candidates first.

The language is split by job: ``syntax_tree`` (the AST and FilterError), ``parser`` (text to
AST and back), ``binder`` (an AST bound to a table's keys as a predicate) and ``pushdown`` (the
conditions a database query may use).
"""
