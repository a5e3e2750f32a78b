"""The API's one body-size policy (config/body_limits.py): every body within README's limits is read, however
its characters are spelt, and every body over its endpoint's limit is a 413 in the error shape that names
the limit, never a 500."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from sources.models import Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db

EMOJI = "\U0001f600"  # 4 bytes in UTF-8, 12 as JSON's \ud83d\ude00


def escaped_json(body: dict) -> str:
    """As Python's json and requests send it: everything outside ASCII as \\u escapes."""
    return json.dumps(body, ensure_ascii=True)


def documents(agent, external_id: str = "") -> str:
    return f"/api/v1/agents/{agent.id}/documents/{external_id}"


def _too_large(response) -> dict:
    assert response.status_code == 413, response.content[:500]
    error = response.json()["error"]
    assert error["code"] == "too_large" and isinstance(error["limit"], int), error
    return error


def test_a_document_of_a_million_four_byte_characters_is_accepted_however_it_is_spelt(api, agent):
    text = EMOJI * 1_000_000
    raw = api.put(
        f"/api/v1/agents/{agent.id}/documents/utf8", {"title": "Smiles", "text": text}, format="json"
    )
    assert raw.status_code == 202, raw.content[:500]  # 4 MB of UTF-8: Django's 2.5 MB answered 500
    body = escaped_json({"title": "Smiles", "text": text + "!"})
    assert len(body) > 12_000_000
    escaped = api.put(
        f"/api/v1/agents/{agent.id}/documents/escaped", data=body, content_type="application/json"
    )
    assert escaped.status_code == 413  # 1,000,001 characters: refused by the document's own limit
    assert "limit is 1,000,000" in escaped.json()["error"]["fields"]["text"][0]


def test_a_batch_of_four_megabytes_is_accepted(api, agent):
    documents = [{"external_id": f"part-{i}", "text": f"Part {i}. " + "é" * 100_000} for i in range(20)]
    response = api.post(f"/api/v1/agents/{agent.id}/documents:batch", {"documents": documents}, format="json")
    assert response.status_code == 200, response.content[:500]
    assert response.json()["counts"]["created"] == 20


def test_pasted_text_at_its_limit_is_accepted_and_one_character_more_is_a_field_error(api, agent):
    def post(characters: int):
        body = {"kind": "text", "title": "Smiles", "agent": agent.id, "content": EMOJI * characters}
        return api.post("/api/v1/sources", data=escaped_json(body), content_type="application/json")

    assert post(1_000_000).status_code == 201  # 12 MB as sent by Python's json
    over = post(1_000_001)
    assert over.status_code == 400 and "content" in over.json()["error"]["fields"], over.content[:300]


def test_bodies_over_their_endpoints_limit_are_413_naming_the_limit(api, agent):
    with override_settings(PUSH_MAX_REQUEST_BYTES=1000):
        error = _too_large(
            api.put(f"/api/v1/agents/{agent.id}/documents/big", {"text": "z" * 2000}, format="json")
        )
        assert error["limit"] == 1000 and "PUSH_MAX_REQUEST_BYTES" in error["message"]
        documents = [{"external_id": "a", "text": "z" * 2000}]
        _too_large(
            api.post(f"/api/v1/agents/{agent.id}/documents:batch", {"documents": documents}, format="json")
        )
    # Any other endpoint: API_MAX_REQUEST_BYTES (2.5 MB), where Django's own limit answered 500.
    error = _too_large(api.patch("/api/v1/workspace", {"default_schedule": "x" * 3_000_000}, format="json"))
    assert error["limit"] == 2_621_440 and "API_MAX_REQUEST_BYTES" in error["message"]
    with override_settings(TEXT_SOURCE_MAX_CHARS=10):
        body = {"kind": "text", "title": "t", "agent": agent.id, "content": "x" * 1_100_000}
        error = _too_large(api.post("/api/v1/sources", body, format="json"))
        assert "TEXT_SOURCE_MAX_CHARS" in error["message"] and "10 characters" in error["message"]
    with workspace_scope(agent.workspace_id):
        assert not Source.objects.exists() and not Document.objects.exists()


@override_settings(UPLOAD_MAX_FILE_BYTES=1000, UPLOAD_MAX_FILES_PER_REQUEST=2)
def test_an_upload_over_the_files_and_form_allowance_is_413(api, agent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("big.txt", b"a" * 1_100_000, content_type="text/plain")
    error = _too_large(api.post("/api/v1/sources", {"agent": agent.id, "file": upload}, format="multipart"))
    assert "UPLOAD_MAX_FILE_BYTES" in error["message"]


def test_an_over_limit_body_is_refused_before_authentication(client, agent):
    # The size is known from the headers: no key is looked up and nothing is parsed.
    response = client.patch(
        "/api/v1/workspace", data=json.dumps({"x": "y" * 3_000_000}), content_type="application/json"
    )
    _too_large(response)


def test_the_message_says_what_to_do(api, agent):
    with override_settings(PUSH_MAX_REQUEST_BYTES=1000):
        error = _too_large(
            api.put(f"/api/v1/agents/{agent.id}/documents/big", {"text": "z" * 2000}, format="json")
        )
    assert "Send fewer documents at once" in error["message"]


def test_an_outsider_sending_a_large_document_to_our_agent_gets_404(outsider_api, agent):
    response = outsider_api.put(
        f"/api/v1/agents/{agent.id}/documents/x", {"text": "é" * 1_500_000}, format="json"
    )
    assert response.status_code == 404
    assert not Source.unscoped.filter(agent=agent).exists()


def test_djangos_own_refusal_of_a_body_is_a_413_not_a_500(api, agent):
    # A backstop for a deployment whose DATA_UPLOAD_MAX_MEMORY_SIZE undercuts the policy.
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
        error = _too_large(api.put(documents(agent, "big"), {"text": "z" * 2000}, format="json"))
    assert error["limit"] == 1000 and "DATA_UPLOAD_MAX_MEMORY_SIZE" in error["message"]
