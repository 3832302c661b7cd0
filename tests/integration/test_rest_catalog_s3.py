"""The Iceberg REST catalog on S3: moto's S3 server on 127.0.0.1 (path-style, static
credentials), the service writing metadata and purging through PyIceberg's FileIO, PyIceberg's
RestCatalog writing data files; on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer

from tests.support.rest_scenario import catalog, run_scenario
from tests.support.server import free_port, running_service

KEY, SECRET, REGION, BUCKET = "test-key", "test-secret", "us-east-1", "lake"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3_client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )


def test_the_users_path_on_s3(database_url: str, tmp_path: Path, s3_endpoint: str) -> None:
    s3 = s3_client(s3_endpoint)
    bucket = f"{BUCKET}-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    s3.create_bucket(Bucket=bucket)
    s3_settings = {
        "s3_endpoint": s3_endpoint,
        "s3_region": REGION,
        "s3_access_key_id": KEY,
        "s3_secret_access_key": SECRET,
    }

    def exists(location: str) -> bool:
        assert location.startswith(f"s3://{bucket}/"), location
        try:
            s3.head_object(Bucket=bucket, Key=location.removeprefix(f"s3://{bucket}/"))
        except ClientError:
            return False
        return True

    with running_service(database_url, tmp_path / "warehouse", rest_port=0, **s3_settings) as svc:
        cat = catalog(
            svc.rest.port,
            **{
                "s3.endpoint": s3_endpoint,
                "s3.access-key-id": KEY,
                "s3.secret-access-key": SECRET,
                "s3.region": REGION,
            },
        )
        run_scenario(cat, {"location": f"s3://{bucket}/sales.db"}, exists)
