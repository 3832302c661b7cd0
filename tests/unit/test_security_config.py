"""The security settings: secrets masked in every dump, inconsistent combinations refused."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hms_cache_proxy.config import Settings


def test_new_secrets_are_masked_in_the_dump_and_listed_for_the_log() -> None:
    s = Settings(
        database_url="postgresql://hms:db-secret-1@db/hms",
        admin_token="token-secret-2",
        tls_cert_file="c.pem",
        tls_key_file="k.pem",
        tls_key_password="key-secret-3",
        upstream_tls_key_password="upstream-key-secret-5",
        sasl_enabled=True,
        sasl_users={"alice": "sasl-secret-4"},
    )
    dump = json.dumps(s.redacted(), default=str)
    secrets = ("db-secret-1", "token-secret-2", "key-secret-3", "sasl-secret-4")
    for secret in (*secrets, "upstream-key-secret-5"):
        assert secret not in dump
        assert secret in s.secrets()
    assert s.redacted()["sasl_users"] == {"alice": "********"}
    assert s.redacted()["tls_key_password"] == "********"


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"tls_cert_file": "c.pem"}, "tls_cert_file and tls_key_file must be set together"),
        ({"tls_key_file": "k.pem"}, "tls_cert_file and tls_key_file must be set together"),
        ({"tls_client_auth": "required"}, "needs tls_ca_file"),
        (
            {"upstream_tls": True, "upstream_tls_cert_file": "c.pem"},
            "upstream_tls_cert_file and upstream_tls_key_file must be set together",
        ),
        (
            {"upstream_tls_cert_file": "c.pem", "upstream_tls_key_file": "k.pem"},
            "set upstream_tls: true too",
        ),
        ({"sasl_enabled": True}, "needs at least one user"),
        (
            {"sasl_enabled": True, "sasl_users": {"a": "b"}, "transport": "framed"},
            "needs transport: buffered",
        ),
    ],
)
def test_inconsistent_security_settings_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(**settings)


def test_invalid_allow_list_regex_is_refused() -> None:
    with pytest.raises(ValidationError, match="invalid regular expression '\\('"):
        Settings(allowed_databases=["sales", "("])
    with pytest.raises(ValidationError, match="invalid regular expression"):
        Settings(allowed_databases_by_user={"bob": ["[x"]})
