"""open_txns, commit_txn, allocate_table_write_ids and abort_txn on PostgreSQL as one
server-side function call each.

``pgsql.py`` sends a call's steps as a few messages; here the same steps, in the same order
and on the same rows, run inside a PL/pgSQL function in this project's own schema (``install``
creates it), called as one autocommit statement: one round trip per Thrift call, the
statement's implicit transaction committing before the answer comes back.

The events (OPEN_TXN, COMMIT_TXN, ALLOC_WRITE_ID_EVENT, ABORT_TXN) are written by the function
in the same transaction, under the NOTIFICATION_SEQUENCE row lock as ``events.log`` takes it.
PL/pgSQL cannot gzip, so these rows are written in Hive's plain JSON format (MESSAGE_FORMAT
``json-0.2``, which every reader of the log decodes per row, Hive's too). The body is built in
Python as today's and sent as a template: the values only the database knows (the new txn ids,
the txn's write ids) replace placeholders that name their key
(``"fromTxnId":-7000000000000000001``), which no JSON string value can contain. Function names
carry the version, so instances of several versions can share one database.

PL/pgSQL plans each statement like a prepared statement (five custom plans, then the generic
one if its estimate is not above theirs). A parameter whose value sizes the estimate
(``generate_series(1, p_n)``, ``unnest(p_txns)``, the watermark's bounds, the table's name) is
read through a scalar subquery, an InitPlan, as ``prepared.generic_prepared`` does: custom and
generic plans then estimate alike and the generic plan is kept (version 3 planned open_txns'
INSERT and allocate's write-id read on every call; tests/integration/
test_txn_function_generic_plans.py).
"""

from __future__ import annotations

from typing import Any

SCHEMA = "hms_cache_proxy"
VERSION = 5
"""Bump with any change of the functions' text or signatures (new names, old ones stay)."""

OPEN_FN = f"{SCHEMA}.open_txns_v{VERSION}"
COMMIT_FN = f"{SCHEMA}.commit_txn_v{VERSION}"
ALLOCATE_FN = f"{SCHEMA}.allocate_write_ids_v{VERSION}"
ABORT_FN = f"{SCHEMA}.abort_txn_v{VERSION}"

FROM_MARK = '"fromTxnId":-7000000000000000001'
TO_MARK = '"toTxnId":-7000000000000000002'
WRITES_MARK = '"txnWrites":[["@","@",-7000000000000000003]]'
WRITE_ID_LIST_MARK = '"writeIdList":[-7000000000000000004]'
DBS_UPDATED_MARK = '"dbsUpdated":["@"]'
"""The placeholders in the bodies' JSON text (sentinel values of the keys they stand for)."""
FROM_SENTINEL, TO_SENTINEL, WRITE_ID_SENTINEL, WRITE_ID_LIST_SENTINEL = (
    -7000000000000000001,
    -7000000000000000002,
    -7000000000000000003,
    -7000000000000000004,
)

_NOW_MS = "CAST(floor(extract(epoch FROM current_timestamp) * 1000) AS bigint)"

# The event steps every function ends with, after all its other work: the sequence row's lock
# is held from its UPDATE to the commit (event ids in commit order, docs/cache.md), so only two
# statements run under it. The UPDATE takes the lock and returns the moved NEXT_EVENT_ID (the
# newest committed version of the row: READ COMMITTED re-reads it once the lock is granted);
# the INSERT, a new statement and so a snapshot taken after the grant, reads the previous
# event's time in its own SELECT (events.log's reserve and write, folded into two statements).
_WRITE_EVENT = """
  UPDATE "NOTIFICATION_SEQUENCE" SET "NEXT_EVENT_ID" = "NEXT_EVENT_ID" + 1
    RETURNING "NEXT_EVENT_ID" INTO v_next;
  IF v_next IS NULL THEN
    INSERT INTO "NOTIFICATION_SEQUENCE" ("NNI_ID", "NEXT_EVENT_ID") VALUES (1, 1)
      ON CONFLICT DO NOTHING;
    UPDATE "NOTIFICATION_SEQUENCE" SET "NEXT_EVENT_ID" = "NEXT_EVENT_ID" + 1
      RETURNING "NEXT_EVENT_ID" INTO v_next;
  END IF;
  v_event := v_next - 1;
  INSERT INTO "NOTIFICATION_LOG" ("NL_ID", "EVENT_ID", "EVENT_TIME", "EVENT_TYPE", "CAT_NAME",
    "DB_NAME", "TBL_NAME", "MESSAGE", "MESSAGE_FORMAT")
    SELECT p_nl_id, v_event, GREATEST(floor(extract(epoch FROM clock_timestamp()))::bigint,
        COALESCE((SELECT p."EVENT_TIME" FROM "NOTIFICATION_LOG" p
          WHERE p."EVENT_ID" = v_event - 1), 0)),
      v_type_name, NULL, v_db, v_tbl, v_body, p_format
    RETURNING "EVENT_TIME" INTO v_time;
  IF p_channel IS NOT NULL THEN
    PERFORM pg_notify(p_channel, v_event::text);
  END IF;
"""

# pgsql._OPEN_UNSETTLED: the lowest unsettled txn still open, nothing read without one, each
# looked up by id (a plan made while TXNS was small kept ``= ANY`` a scan of all of it).
_UNSETTLED_OPEN = """CASE WHEN cardinality((SELECT p_unsettled)) > 0 THEN (SELECT min(u.id)
        FROM unnest((SELECT p_unsettled)::bigint[]) AS u (id), LATERAL (SELECT 1 FROM "TXNS" x
          WHERE x."TXN_ID" = u.id AND x."TXN_STATE" = 'o' OFFSET 0) o) END"""

OPEN_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {OPEN_FN}(
  p_n integer, p_user text, p_host text, p_agent text, p_type integer, p_min_history boolean,
  p_floor bigint, p_unsettled bigint[], p_window bigint, p_on_floor boolean,
  p_nl_id bigint, p_message text, p_format text, p_channel text)
RETURNS TABLE (txn_ids bigint[], lock_wait double precision, event_id bigint,
  event_time bigint, message text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_ids bigint[]; v_wait double precision; v_next bigint; v_event bigint;
  v_time bigint; v_body text; v_type_name text := 'OPEN_TXN';
  v_db text; v_tbl text;
BEGIN
  -- pgsql.open_sql: TXN_LOCK_TBL shared, then the TXNS rows and (with the level switch) their
  -- MIN_HISTORY_LEVEL rows in one statement, the watermark as pgsql._OPEN_ON_FLOOR (a recent
  -- settled floor) or pgsql._OPEN_MIN_HISTORY (Hive's two searches of TXNS) has it.
  LOCK TABLE "TXN_LOCK_TBL" IN SHARE MODE;
  v_wait := extract(epoch FROM clock_timestamp() - statement_timestamp());
  IF p_min_history AND p_on_floor THEN
    WITH now AS (SELECT {_NOW_MS} AS ms),
    new AS (INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER",
        "TXN_HOST", "TXN_AGENT_INFO", "TXN_TYPE")
      SELECT 'o', now.ms, now.ms, p_user, p_host, p_agent, p_type
      FROM now, generate_series(1, (SELECT p_n)) RETURNING "TXN_ID"),
    mark AS (SELECT LEAST((SELECT p_floor), {_UNSETTLED_OPEN}) AS m),
    mhl AS (INSERT INTO "MIN_HISTORY_LEVEL" ("MHL_TXNID", "MHL_MIN_OPEN_TXNID")
      SELECT new."TXN_ID", mark.m FROM new, mark)
    SELECT array_agg("TXN_ID" ORDER BY "TXN_ID") INTO v_ids FROM new;
  ELSIF p_min_history THEN
    WITH now AS (SELECT {_NOW_MS} AS ms),
    new AS (INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER",
        "TXN_HOST", "TXN_AGENT_INFO", "TXN_TYPE")
      SELECT 'o', now.ms, now.ms, p_user, p_host, p_agent, p_type
      FROM now, generate_series(1, (SELECT p_n)) RETURNING "TXN_ID"),
    first AS (SELECT min("TXN_ID") AS id FROM new),
    mark AS (SELECT LEAST(
      COALESCE(LEAST((SELECT min("TXN_ID") FROM "TXNS"
          WHERE "TXN_STATE" = 'o' AND "TXN_ID" >= (SELECT p_floor)
          AND "TXN_ID" <= (SELECT max("TXN_ID") FROM "TXNS")),
        {_UNSETTLED_OPEN}), first.id),
      COALESCE((SELECT max("TXN_ID") + 1 FROM "TXNS"
        WHERE "TXN_STARTED" < (SELECT ms FROM now) - (SELECT p_window)), first.id)) AS m
      FROM first),
    mhl AS (INSERT INTO "MIN_HISTORY_LEVEL" ("MHL_TXNID", "MHL_MIN_OPEN_TXNID")
      SELECT new."TXN_ID", mark.m FROM new, mark)
    SELECT array_agg("TXN_ID" ORDER BY "TXN_ID") INTO v_ids FROM new;
  ELSE
    WITH now AS (SELECT {_NOW_MS} AS ms),
    new AS (INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER",
        "TXN_HOST", "TXN_AGENT_INFO", "TXN_TYPE")
      SELECT 'o', now.ms, now.ms, p_user, p_host, p_agent, p_type
      FROM now, generate_series(1, (SELECT p_n)) RETURNING "TXN_ID")
    SELECT array_agg("TXN_ID" ORDER BY "TXN_ID") INTO v_ids FROM new;
  END IF;
  IF p_message IS NULL THEN  -- READ_ONLY: no event
    RETURN QUERY SELECT v_ids, v_wait, NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;
  v_body := replace(replace(p_message, '{FROM_MARK}', '"fromTxnId":' || v_ids[1]),
    '{TO_MARK}', '"toTxnId":' || v_ids[cardinality(v_ids)]);
{_WRITE_EVENT}
  RETURN QUERY SELECT v_ids, v_wait, v_event, v_time, v_body;
END
$fn$
"""

COMMIT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {COMMIT_FN}(
  p_txn bigint, p_min_history_level boolean, p_min_history_write_id boolean,
  p_temp_id bigint, p_nl_id bigint, p_message text, p_format text, p_channel text)
RETURNS TABLE (outcome text, event_id bigint, event_time bigint, message text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_txn_type integer; v_ops text[]; v_writes text; v_read_only boolean; v_move boolean;
  v_update boolean; v_commit_id bigint;
  v_next bigint; v_event bigint; v_time bigint; v_body text;
  v_type_name text := 'COMMIT_TXN'; v_db text; v_tbl text;
BEGIN
  -- pgsql.lock_and_read_commit: the open txn's row locked, then (new statements, snapshots
  -- taken with the lock held) its type, operation types and write ids.
  SELECT COALESCE("TXN_TYPE", 0) INTO v_txn_type FROM "TXNS"
    WHERE "TXN_ID" = p_txn AND "TXN_STATE" = 'o' FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'general'::text, NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;
  SELECT COALESCE(array_agg(DISTINCT "TC_OPERATION_TYPE"::text), '{{}}') INTO v_ops
    FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = p_txn;
  -- Only DEFAULT (0) and READ_ONLY (2) txns; a DEFAULT one that updated or deleted only with
  -- exclWriteEnabled (p_temp_id given: no write-conflict check, whose loser is aborted). The
  -- rest is the general path's (Commit._commit).
  v_update := v_txn_type = 0 AND v_ops && ARRAY['u', 'd'];
  IF v_txn_type NOT IN (0, 2) OR (v_update AND p_temp_id IS NULL) THEN
    RETURN QUERY SELECT 'general'::text, NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;
  v_read_only := v_txn_type = 2;
  IF NOT v_read_only THEN
    SELECT '[' || string_agg('[' || to_json(t."T2W_DATABASE")::text || ','
        || to_json(t."T2W_TABLE")::text || ',' || t."T2W_WRITEID" || ']', ','
        ORDER BY t."T2W_DATABASE", t."T2W_TABLE") || ']' INTO v_writes
      FROM "NEXT_WRITE_ID" n JOIN "TXN_TO_WRITE_ID" t ON t."T2W_DATABASE" = n."NWI_DATABASE"
      AND t."T2W_TABLE" = n."NWI_TABLE" AND t."T2W_TXNID" = p_txn;
  END IF;
  v_move := cardinality(v_ops) > 0 AND NOT v_read_only;
  IF v_update THEN
    -- Commit._commit: the write set under a temporary commit id (updates and deletes; without
    -- MIN_HISTORY_LEVEL every write but compaction), then TXN_LOCK_TBL exclusive (no txn opens
    -- while the commit is numbered) and the commit id, the txn hwm.
    INSERT INTO "WRITE_SET" ("WS_DATABASE", "WS_TABLE", "WS_PARTITION", "WS_TXNID",
        "WS_COMMIT_ID", "WS_OPERATION_TYPE")
      SELECT DISTINCT "TC_DATABASE", "TC_TABLE", "TC_PARTITION", "TC_TXNID", p_temp_id,
        "TC_OPERATION_TYPE"
      FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = p_txn AND CASE WHEN p_min_history_level
        THEN "TC_OPERATION_TYPE" IN ('u', 'd') ELSE "TC_OPERATION_TYPE" <> 'c' END;
    LOCK TABLE "TXN_LOCK_TBL" IN EXCLUSIVE MODE;
    SELECT max("TXN_ID") INTO v_commit_id FROM "TXNS";
  -- pgsql.finish_commit_sql
  ELSIF v_move AND NOT p_min_history_level THEN
    INSERT INTO "WRITE_SET" ("WS_DATABASE", "WS_TABLE", "WS_PARTITION", "WS_TXNID",
        "WS_COMMIT_ID", "WS_OPERATION_TYPE")
      SELECT DISTINCT "TC_DATABASE", "TC_TABLE", "TC_PARTITION", "TC_TXNID",
        (SELECT max("TXN_ID") FROM "TXNS"), "TC_OPERATION_TYPE"
      FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = p_txn AND "TC_OPERATION_TYPE" <> 'c';
  END IF;
  IF v_move THEN
    INSERT INTO "COMPLETED_TXN_COMPONENTS" ("CTC_TXNID", "CTC_DATABASE", "CTC_TABLE",
        "CTC_PARTITION", "CTC_WRITEID", "CTC_UPDATE_DELETE")
      (SELECT "TC_TXNID", "TC_DATABASE", "TC_TABLE", "TC_PARTITION", "TC_WRITEID",
         CASE WHEN v_update THEN 'Y' ELSE 'N' END
       FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = p_txn AND "TC_OPERATION_TYPE" <> 'c');
    IF v_update THEN  -- Commit.finish_commit: the write set gets its commit id
      UPDATE "WRITE_SET" SET "WS_COMMIT_ID" = v_commit_id
        WHERE "WS_COMMIT_ID" = p_temp_id AND "WS_TXNID" = p_txn;
    END IF;
    DELETE FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = p_txn;
  END IF;
  DELETE FROM "HIVE_LOCKS" WHERE "HL_TXNID" = p_txn;
  UPDATE "TXNS" SET "TXN_STATE" = 'c' WHERE "TXN_ID" = p_txn;
  IF p_min_history_level THEN
    DELETE FROM "MIN_HISTORY_LEVEL" WHERE "MHL_TXNID" = p_txn;
  END IF;
  IF p_min_history_write_id THEN
    DELETE FROM "MIN_HISTORY_WRITE_ID" WHERE "MH_TXNID" = p_txn;
  END IF;
  IF v_read_only THEN  -- no event
    RETURN QUERY SELECT 'done'::text, NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;
  v_body := CASE WHEN v_writes IS NULL THEN replace(p_message, ',{WRITES_MARK}', '')
    ELSE replace(p_message, '{WRITES_MARK}', '"txnWrites":' || v_writes) END;
{_WRITE_EVENT}
  RETURN QUERY SELECT 'done'::text, v_event, v_time, v_body;
END
$fn$
"""

ALLOCATE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {ALLOCATE_FN}(
  p_txns bigint[], p_db text, p_tbl text,
  p_nl_id bigint, p_message text, p_format text, p_channel text)
RETURNS TABLE (outcome text, txn_ids bigint[], write_ids bigint[], event_id bigint,
  event_time bigint, message text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_bad boolean; v_missing bigint[]; v_k integer; v_first bigint; v_txns bigint[];
  v_wids bigint[]; v_next bigint; v_event bigint; v_time bigint; v_body text;
  v_type_name text := 'ALLOC_WRITE_ID_EVENT'; v_db text := p_db; v_tbl text := p_tbl;
BEGIN
  -- pgsql.lock_and_read_allocation: the txns' rows locked in id order, then their states.
  PERFORM 1 FROM "TXNS" WHERE "TXN_ID" = ANY(p_txns) ORDER BY "TXN_ID" FOR UPDATE;
  SELECT count(*) < cardinality(p_txns) OR bool_or("TXN_STATE" <> 'o'
      OR COALESCE("TXN_TYPE", 0) = 2) INTO v_bad
    FROM "TXNS" WHERE "TXN_ID" = ANY(p_txns);
  IF v_bad THEN  -- the general path names the txn and its state
    RETURN QUERY SELECT 'general'::text, NULL::bigint[], NULL::bigint[], NULL::bigint,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  SELECT COALESCE(array_agg(x ORDER BY x), '{{}}') INTO v_missing
    FROM unnest((SELECT p_txns)) x
    WHERE NOT EXISTS (SELECT 1 FROM "TXN_TO_WRITE_ID" WHERE "T2W_DATABASE" = (SELECT p_db)
      AND "T2W_TABLE" = (SELECT p_tbl) AND "T2W_TXNID" = x);
  v_k := cardinality(v_missing);
  IF v_k > 0 THEN
    -- pgsql.ALLOCATE_WRITE_IDS_SQL
    WITH n AS (INSERT INTO "NEXT_WRITE_ID" AS w ("NWI_DATABASE", "NWI_TABLE", "NWI_NEXT")
        VALUES (p_db, p_tbl, 1 + v_k) ON CONFLICT ("NWI_DATABASE", "NWI_TABLE")
        DO UPDATE SET "NWI_NEXT" = w."NWI_NEXT" + v_k RETURNING "NWI_NEXT" - v_k AS first),
    ins AS (INSERT INTO "TXN_TO_WRITE_ID" ("T2W_TXNID", "T2W_DATABASE", "T2W_TABLE",
        "T2W_WRITEID") SELECT m.txn, p_db, p_tbl, n.first + m.ord - 1
      FROM n, unnest(v_missing) WITH ORDINALITY AS m (txn, ord))
    SELECT first INTO v_first FROM n;
  END IF;
  SELECT array_agg(x ORDER BY x), array_agg(COALESCE(
      (SELECT "T2W_WRITEID" FROM "TXN_TO_WRITE_ID" WHERE "T2W_DATABASE" = (SELECT p_db)
        AND "T2W_TABLE" = (SELECT p_tbl) AND "T2W_TXNID" = x),
      v_first + array_position(v_missing, x) - 1) ORDER BY x)
    INTO v_txns, v_wids FROM unnest((SELECT p_txns)) x;
  IF v_k = 0 THEN  -- nothing new: no event
    RETURN QUERY SELECT 'done'::text, v_txns, v_wids, NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;
  v_body := replace(p_message, '{WRITE_ID_LIST_MARK}',
    '"writeIdList":[' || array_to_string(v_wids, ',') || ']');
{_WRITE_EVENT}
  RETURN QUERY SELECT 'done'::text, v_txns, v_wids, v_event, v_time, v_body;
END
$fn$
"""

ABORT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {ABORT_FN}(
  p_txn bigint, p_reason text, p_min_history_level boolean, p_min_history_write_id boolean,
  p_nl_id bigint, p_message text, p_format text, p_channel text)
RETURNS TABLE (outcome text, event_id bigint, event_time bigint, message text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_txn_type integer; v_dbs text; v_next bigint; v_event bigint;
  v_time bigint; v_body text; v_type_name text := 'ABORT_TXN'; v_db text; v_tbl text;
BEGIN
  -- Abort._abort_txn_txn: the open txn's row locked; a txn not open, or a replayed one
  -- (its database becomes repl.incompatible), is the general path's.
  SELECT COALESCE("TXN_TYPE", 0) INTO v_txn_type FROM "TXNS"
    WHERE "TXN_ID" = p_txn AND "TXN_STATE" = 'o' FOR UPDATE;
  IF NOT FOUND OR EXISTS (SELECT 1 FROM "REPL_TXN_MAP" WHERE "RTM_TARGET_TXN_ID" = p_txn) THEN
    RETURN QUERY SELECT 'general'::text, NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;
  -- Abort.abort_in
  IF p_min_history_level THEN
    DELETE FROM "MIN_HISTORY_LEVEL" WHERE "MHL_TXNID" = p_txn;
  END IF;
  IF p_min_history_write_id THEN
    DELETE FROM "MIN_HISTORY_WRITE_ID" WHERE "MH_TXNID" = p_txn;
  END IF;
  UPDATE "TXNS" SET "TXN_STATE" = 'a', "TXN_META_INFO" = p_reason
    WHERE "TXN_ID" = p_txn AND "TXN_STATE" = 'o';
  DELETE FROM "HIVE_LOCKS" WHERE "HL_TXNID" = p_txn;
  DELETE FROM "REPL_TXN_MAP" WHERE "RTM_TARGET_TXN_ID" = p_txn;
  IF v_txn_type = 2 THEN  -- READ_ONLY: no event
    RETURN QUERY SELECT 'done'::text, NULL::bigint, NULL::bigint, NULL::text;
    RETURN;
  END IF;
  -- Abort.emit_aborts: the databases the txn allocated write ids in
  SELECT COALESCE(string_agg(to_json(d)::text, ',' ORDER BY d), '') INTO v_dbs
    FROM (SELECT DISTINCT "T2W_DATABASE" AS d FROM "TXN_TO_WRITE_ID"
      WHERE "T2W_TXNID" = p_txn) x;
  v_body := replace(p_message, '{DBS_UPDATED_MARK}', '"dbsUpdated":[' || v_dbs || ']');
{_WRITE_EVENT}
  RETURN QUERY SELECT 'done'::text, v_event, v_time, v_body;
END
$fn$
"""

FUNCTIONS = (OPEN_FUNCTION, COMMIT_FUNCTION, ALLOCATE_FUNCTION, ABORT_FUNCTION)
"""Every function of this version, in creation order."""
FUNCTION_SIGNATURES = (
    f"{OPEN_FN}(integer, text, text, text, integer, boolean, bigint, bigint[], bigint, "
    "boolean, bigint, text, text, text)",
    f"{COMMIT_FN}(bigint, boolean, boolean, bigint, bigint, text, text, text)",
    f"{ALLOCATE_FN}(bigint[], text, text, bigint, text, text, text)",
    f"{ABORT_FN}(bigint, text, boolean, boolean, bigint, text, text, text)",
)

OPEN_CALL = (
    f"SELECT txn_ids, lock_wait, event_id, event_time, message FROM {OPEN_FN}("
    "%(n)s, %(user)s, %(host)s, %(agent)s, %(type)s, %(min_history)s, %(floor)s, "
    "%(unsettled)s::bigint[], %(window)s, %(on_floor)s, %(nl_id)s, %(message)s, %(format)s, "
    "%(channel)s)"
)
COMMIT_CALL = (
    f"SELECT outcome, event_id, event_time, message FROM {COMMIT_FN}("
    "%(txn)s, %(level)s, %(write_id)s, %(temp_id)s, %(nl_id)s, %(message)s, %(format)s, "
    "%(channel)s)"
)

ALLOCATE_CALL = (
    f"SELECT outcome, txn_ids, write_ids, event_id, event_time, message FROM {ALLOCATE_FN}("
    "%(txns)s::bigint[], %(db)s, %(tbl)s, %(nl_id)s, %(message)s, %(format)s, %(channel)s)"
)

ABORT_CALL = (
    f"SELECT outcome, event_id, event_time, message FROM {ABORT_FN}("
    "%(txn)s, %(reason)s, %(level)s, %(write_id)s, %(nl_id)s, %(message)s, %(format)s, "
    "%(channel)s)"
)


def open_values(
    params: dict[str, Any],
    min_history: bool,
    on_floor: bool,
    nl_id: int | None,
    message: str | None,
    fmt: str,
    channel: str | None,
) -> dict[str, Any]:
    """OPEN_CALL's values: ``pgsql.open_params``' and the event's (``message`` None: none);
    ``on_floor``: the watermark from the settled floor (``Txns.floor_bounds_watermark``)."""
    return {
        **params,
        "min_history": min_history,
        "on_floor": on_floor,
        "nl_id": nl_id,
        "message": message,
        "format": fmt,
        "channel": channel,
    }


def commit_values(
    txn_id: int,
    level: bool,
    write_id: bool,
    temp_id: int | None,
    nl_id: int,
    message: str,
    fmt: str,
    channel: str | None,
) -> dict[str, Any]:
    """COMMIT_CALL's values."""
    return {
        "txn": txn_id,
        "level": level,
        "write_id": write_id,
        "temp_id": temp_id,
        "nl_id": nl_id,
        "message": message,
        "format": fmt,
        "channel": channel,
    }
