"""The database foundation of store/: engine, schema, id sequences, batching, prepared statements.

It imports nothing else of store/, so the event log, the transaction service and the SQL store
can all build on it (tests/unit/test_import_layers.py checks the direction).
"""
