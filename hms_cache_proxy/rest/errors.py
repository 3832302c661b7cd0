"""REST errors as the spec's ErrorModel: ``{"error": {"message", "type", "code"}}``."""

from __future__ import annotations

import json


class RestError(Exception):
    """Ends a request with an ErrorModel answer of ``status``; ``kind`` is the spec's type
    (the Java exception name clients map to their own)."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message

    def body(self) -> bytes:
        error = {"message": self.message, "type": self.kind, "code": self.status}
        return json.dumps({"error": error}).encode()


def bad_request(message: str) -> RestError:
    return RestError(400, "BadRequestException", message)


def no_namespace(name: str) -> RestError:
    return RestError(404, "NoSuchNamespaceException", f"Namespace does not exist: {name}")


def no_table(db: str, name: str) -> RestError:
    return RestError(404, "NoSuchTableException", f"Table does not exist: {db}.{name}")


def commit_failed(message: str) -> RestError:
    return RestError(409, "CommitFailedException", message)


def commit_unknown(message: str) -> RestError:
    return RestError(500, "CommitStateUnknownException", message)
