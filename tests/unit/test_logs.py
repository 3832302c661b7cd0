"""hms_cache_proxy.logs: the JSON formatter's fields (the exception text included) and the call
context that stamps request ids, on real logging handlers."""

from __future__ import annotations

import io
import json
import logging
import os
import threading

from hms_cache_proxy import logs


def _capture() -> tuple[logging.Logger, io.StringIO, logging.Handler]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(logs.CallFilter())
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("test_logs")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger, out, handler


def test_records_inside_a_call_carry_its_id_and_an_exception_its_text() -> None:
    logger, out, handler = _capture()

    def connection() -> None:
        call = logs.bind_connection("10.1.2.3:4567")
        logger.info("between calls")
        call.begin("get_table")
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("failed")
        logger.debug("still in the call")
        call.end()
        call.begin("get_database")
        logger.info("second call")
        call.end()

    try:
        worker = threading.Thread(target=connection)
        worker.start()
        worker.join()
        logger.info("no connection here")
    finally:
        logger.removeHandler(handler)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    between, failed, still, second, outside = records
    assert between["client"] == "10.1.2.3:4567" and between["request_id"] is None
    assert failed["method"] == "get_table" and failed["level"] == "ERROR"
    assert "ValueError: boom" in failed["exception"]
    assert still["request_id"] == failed["request_id"] is not None
    assert second["request_id"] not in (None, failed["request_id"])
    assert outside["client"] is None and outside["request_id"] is None
    assert failed["time"].endswith("Z")


def test_text_format_appends_the_call() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(logs.CallFilter())
    handler.setFormatter(logging.Formatter(logs.TEXT_FORMAT))
    logger = logging.getLogger("test_logs_text")
    logger.addHandler(handler)
    logger.propagate = False

    def connection() -> None:
        call = logs.bind_connection("127.0.0.1:9")
        call.begin("get_all_databases")
        logger.warning("inside")
        call.end()

    try:
        worker = threading.Thread(target=connection)
        worker.start()
        worker.join()
    finally:
        logger.removeHandler(handler)
    line = out.getvalue().strip()
    assert "WARNING test_logs_text: inside [request_id=" in line
    assert line.endswith(" client=127.0.0.1:9 method=get_all_databases]")


def test_a_forked_worker_has_request_ids_of_its_own_and_says_which_worker_it_is() -> None:
    def one_call_logged() -> dict[str, object]:
        logger, out, handler = _capture()
        try:
            call = logs.bind_connection("10.1.2.3:4567")
            call.begin("get_table")
            logger.info("in a call")
            call.end()
        finally:
            logger.removeHandler(handler)
        return dict(json.loads(out.getvalue()))

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # as a worker of `serve --workers` starts
        try:
            logs.set_worker(3)
            os.write(write_end, json.dumps(one_call_logged()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        child = json.loads(pipe.read())
    os.waitpid(pid, 0)
    parent = one_call_logged()
    assert child["worker"] == 3 and "worker" not in parent
    child_prefix = str(child["request_id"]).split("-")[0]
    assert child_prefix != str(parent["request_id"]).split("-")[0]
