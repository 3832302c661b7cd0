"""``upstream_sasl_as_caller``: a proxy in upstream mode logs in to a SASL PLAIN upstream as each
caller, with the user and password the caller proved to it, so the upstream authorizes every
call as that caller (docs/security.md, "Upstream mode").

The upstream is this project's server with SASL PLAIN users and a per-user allow-list, which
decides by the SASL login alone (set_ugi does not change it): alice may use ``a_*`` only, bob
``b_*`` only, the proxy's own account everything. Over real SASL PLAIN connections (thrift_sasl
and pure-sasl) on 127.0.0.1, on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TMessageType
from thriftpy2.utils import deserialize, serialize

from hms_cache_proxy.app import Service, build_service
from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.server import message_bytes
from hms_cache_proxy.server.upstream import UpstreamPool
from tests.integration.test_upstream_passthrough import proxy_settings
from tests.support.security import sasl_client
from tests.support.server import running_service

pytestmark = pytest.mark.postgres

UPSTREAM_USERS = {"proxy": "proxy-pw", "alice": "alice-pw", "bob": "bob-pw"}
ALLOWED = {"proxy": [".*"], "alice": ["a_.*"], "bob": ["b_.*"]}


@pytest.fixture
def upstream(pg_url: str, tmp_path: Path) -> Iterator[Service]:
    with running_service(
        pg_url,
        tmp_path / "warehouse",
        sasl_enabled=True,
        sasl_users=UPSTREAM_USERS,
        allowed_databases_by_user=ALLOWED,
    ) as svc:
        admin = sasl_client(svc.port, "proxy", "proxy-pw")
        try:
            admin.create_database(hms.Database(name="seed"))  # a log the sidecar follows
        finally:
            admin.close()
        yield svc


def _proxy(upstream: Service, **overrides: Any) -> Service:
    settings = proxy_settings(
        f"thrift://127.0.0.1:{upstream.port}",
        sasl_enabled=True,
        sasl_users={"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"},
        upstream_sasl_user="proxy",
        upstream_sasl_password="proxy-pw",
        **overrides,
    )
    svc = build_service(settings)
    svc.start_background()
    return svc


def test_the_upstream_authorizes_each_caller_as_itself_on_one_shared_connection(
    upstream: Service,
) -> None:
    # One upstream connection for both callers: it is logged in again for each switch, never
    # used by one caller while logged in as the other.
    proxy = _proxy(upstream, upstream_sasl_as_caller=True, upstream_max_connections=1)
    alice = sasl_client(proxy.port, "alice", "alice-pw")
    bob = sasl_client(proxy.port, "bob", "bob-pw")
    try:
        for n in range(3):
            alice.create_database(hms.Database(name=f"a_{n}"))
            with pytest.raises(hms.MetaException, match="may not be created here"):
                bob.create_database(hms.Database(name=f"a_bob_{n}"))
            bob.create_database(hms.Database(name=f"b_{n}"))
            with pytest.raises(hms.MetaException, match="may not be created here"):
                alice.create_database(hms.Database(name=f"b_alice_{n}"))
        assert proxy.upstream is not None and proxy.upstream.open_connections <= 1
        for _ in range(2):  # the second time from each caller's own cache entries
            assert alice.get_database("a_0").ownerName == "alice"
            assert bob.get_database("b_0").ownerName == "bob"
            with pytest.raises(hms.NoSuchObjectException):
                bob.get_database("a_0")  # not alice's entry: the upstream hides it from bob
        assert sorted(alice.get_all_databases()) == ["a_0", "a_1", "a_2"]
        assert sorted(bob.get_all_databases()) == ["b_0", "b_1", "b_2"]
    finally:
        alice.close()
        bob.close()
        proxy.stop(grace_seconds=5)


def test_a_caller_the_upstream_does_not_know_is_refused_there(upstream: Service) -> None:
    proxy = _proxy(upstream, upstream_sasl_as_caller=True)
    carol = sasl_client(proxy.port, "carol", "carol-pw")  # known here, not upstream
    try:
        with pytest.raises(hms.MetaException) as refused:
            carol.get_all_databases()
        assert "SASL PLAIN login as 'carol' refused" in refused.value.message
        assert f"thrift://127.0.0.1:{upstream.port}" in refused.value.message
    finally:
        carol.close()
        proxy.stop(grace_seconds=5)


def test_without_it_the_upstream_sees_the_proxys_own_login(upstream: Service) -> None:
    proxy = _proxy(upstream)  # what the setting changes: the proxy's account is let through
    bob = sasl_client(proxy.port, "bob", "bob-pw")
    try:
        bob.create_database(hms.Database(name="a_by_bob"))
        assert "a_by_bob" in bob.get_all_databases()
    finally:
        bob.close()
        proxy.stop(grace_seconds=5)


def _databases(pool: UpstreamPool, login: tuple[str, str] | None) -> list[str]:
    """get_all_databases on one of ``pool``'s connections in the empty session."""
    proto = TBinaryProtocolFactory()
    header = message_bytes.header("get_all_databases", TMessageType.CALL, 1, compact=False)
    request = header + serialize(service.get_all_databases_args(), proto)
    reply = pool.call((), request, True, (), login)
    assert reply is not None and reply.mtype == TMessageType.REPLY
    return sorted(deserialize(service.get_all_databases_result(), reply.body, proto).success)


def test_a_connection_logged_in_as_one_caller_is_never_used_for_another(
    upstream: Service,
) -> None:
    admin = sasl_client(upstream.port, "proxy", "proxy-pw")
    try:
        for name in ("a_1", "b_1"):
            admin.create_database(hms.Database(name=name))
    finally:
        admin.close()
    pool = UpstreamPool(
        "127.0.0.1", upstream.port, sasl=("proxy", "proxy-pw"), sasl_as_caller=True,
        max_connections=1,
    )  # fmt: skip
    try:  # the same (empty) session each time: only the login tells the calls apart
        for _ in range(2):
            assert _databases(pool, ("alice", "alice-pw")) == ["a_1"]
            assert _databases(pool, ("bob", "bob-pw")) == ["b_1"]
            assert _databases(pool, None) == ["a_1", "b_1", "default", "seed"]
            assert pool.open_connections == 1
    finally:
        pool.close()
