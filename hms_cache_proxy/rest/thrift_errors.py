"""The handler's Thrift exceptions as REST errors (what a client can act on)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hms_cache_proxy.handler.access import READ_ONLY_MESSAGE
from hms_cache_proxy.idl import hms
from hms_cache_proxy.rest.errors import RestError


@contextmanager
def mapped(
    not_found: Callable[[], RestError] | None = None, refusal: bool = False
) -> Iterator[None]:
    """Declared Thrift exceptions of the block become RestErrors; ``not_found`` makes the 404;
    ``refusal``: a MetaException is the request refused (400: a location outside the roots),
    else a failure of the service (500)."""
    try:
        yield
    except hms.NoSuchObjectException as exc:
        if not_found is not None:
            raise not_found() from exc
        raise RestError(404, "NotFoundException", exc.message or "not found") from exc
    except hms.AlreadyExistsException as exc:
        raise RestError(409, "AlreadyExistsException", exc.message or "already exists") from exc
    except (hms.InvalidObjectException, hms.InvalidOperationException) as exc:
        raise RestError(400, "BadRequestException", exc.message or "invalid request") from exc
    except hms.MetaException as exc:
        if exc.message == READ_ONLY_MESSAGE or "(allowed_databases)" in (exc.message or ""):
            raise RestError(403, "ForbiddenException", exc.message) from exc
        if refusal:
            raise RestError(400, "BadRequestException", exc.message or "refused") from exc
        raise RestError(500, "ServiceFailureException", exc.message or "metastore error") from exc
