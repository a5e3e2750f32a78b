"""Uploads kept in S3-compatible storage (django-storages), against a real S3 server on 127.0.0.1
(moto's server speaks the S3 HTTP protocol; boto3 signs and sends real requests to it).

The pipeline runs in this process: the worker tests cover the queue, this covers the storage."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from moto.server import ThreadedMotoServer

from ingestion.lifecycle import source_delete, source_index_now, source_reindex, upload_create
from retrieval.services import SearchParams, search_passages
from sources.models import Source, Status
from sources.tenancy import workspace_scope
from tests.factories import SHARED_DATA

pytestmark = pytest.mark.django_db
BUCKET = "grounded-test-uploads"
CREDENTIALS = {"aws_access_key_id": "test-key", "aws_secret_access_key": "test-secret"}


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_server, settings):
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1", **CREDENTIALS)
    client.create_bucket(Bucket=BUCKET)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": s3_server,
                "access_key": CREDENTIALS["aws_access_key_id"],
                "secret_key": CREDENTIALS["aws_secret_access_key"],
                "region_name": "us-east-1",
                "default_acl": "private",
                "file_overwrite": True,
            },
        },
    }
    yield client
    for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)


def keys(client, source) -> list[str]:
    prefix = f"uploads/{source.workspace_id}/{source.id}/"
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def status_of(source) -> str:
    with workspace_scope(source.workspace_id):
        return Source.objects.get(id=source.id).status


def test_an_upload_lives_in_s3_from_parse_to_reindex_to_delete(
    bucket, workspace, agent, django_capture_on_commit_callbacks
):
    data = (SHARED_DATA / "documents" / "docx").glob("*.docx")
    path = sorted(data)[0]
    [source] = upload_create(
        workspace=workspace, agent_id=agent.id, files=[SimpleUploadedFile(path.name, path.read_bytes())]
    )
    assert keys(bucket, source) == [f"uploads/{workspace.id}/{source.id}/original.docx"]

    source_index_now(source=source)  # the parser reads the original back from S3
    assert status_of(source) == Status.DONE
    stored = keys(bucket, source)
    assert any(k.endswith("/segments.json") for k in stored) and any("/segment-" in k for k in stored)
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source.id)
        first_chunk = source.chunks.order_by("position").first().text
    query = " ".join(first_chunk.split()[:12])
    hits = search_passages(workspace_id=workspace.id, query=query, params=SearchParams(top_k=3))
    assert hits and hits[0].source_id == source.id

    # Reindexing reads the segments back from S3, even with the original gone.
    bucket.delete_object(Bucket=BUCKET, Key=f"uploads/{workspace.id}/{source.id}/original.docx")
    assert source_reindex(source=source, queue=False)
    source_index_now(source=source)
    assert status_of(source) == Status.DONE
    hits = search_passages(workspace_id=workspace.id, query=query, params=SearchParams(top_k=3))
    assert hits and hits[0].source_id == source.id

    with django_capture_on_commit_callbacks(execute=True):
        source_delete(source=source)
    assert keys(bucket, source) == []


def test_an_upload_whose_file_is_gone_from_s3_asks_for_a_reupload(bucket, workspace, agent):
    [source] = upload_create(
        workspace=workspace,
        agent_id=agent.id,
        files=[SimpleUploadedFile("notes.txt", b"Opening hours are nine to five on weekdays.")],
    )
    for key in keys(bucket, source):
        bucket.delete_object(Bucket=BUCKET, Key=key)
    source_index_now(source=source)
    with workspace_scope(workspace.id):
        failed = Source.objects.get(id=source.id)
    assert failed.status == Status.FAILED and "upload" in failed.error.lower()
