"""The widget's public endpoints refuse a body too big (413) or of the wrong type (415) in the API's error
shape, with the CORS headers an allowed page needs to read the refusal (a browser hides a cross-origin
answer without them), and the OpenAPI schema documents both (issue #56). Other sites and unknown keys still
get no CORS headers."""

import json

import pytest
from django.test import override_settings

from tests.agents.conftest import ORIGIN

pytestmark = pytest.mark.django_db

POSTS = ["chat", "chat/stream", "widget/init"]
OVER_EVERY_API_LIMIT = 3 * 1024 * 1024  # beyond API_MAX_REQUEST_BYTES (2.5 MB) too


def post(client, agent, path, body: bytes, content_type="application/json", origin=ORIGIN, key=None):
    headers = {"HTTP_ORIGIN": origin} if origin else {}
    url = f"/api/v1/agents/{key or agent.public_key}/{path}"
    return client.generic("POST", url, body, content_type=content_type, **headers)


def padded(size: int) -> bytes:
    return json.dumps({"message": "hi", "padding": "x" * size}).encode()


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("size", [20_000, OVER_EVERY_API_LIMIT], ids=["over-the-widget-limit", "over-3mb"])
def test_a_body_too_big_is_a_413_an_allowed_page_can_read(client, agent, path, size):
    with override_settings(WIDGET_MAX_REQUEST_BYTES=16_384):
        response = post(client, agent, path, padded(size))
    assert response.status_code == 413, response.content[:300]
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert "Origin" in response["Vary"]
    error = response.json()["error"]
    assert error["code"] == "too_large" and error["limit"] == 16_384
    assert "WIDGET_MAX_REQUEST_BYTES" in error["message"]


@pytest.mark.parametrize("path", POSTS)
def test_a_body_of_another_type_is_a_415_an_allowed_page_can_read(client, agent, path):
    response = post(client, agent, path, b"message=hi", content_type="text/plain")
    assert response.status_code == 415, response.content[:300]
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_other_sites_and_unknown_keys_get_no_cors_headers_whatever_the_body(client, agent):
    big = padded(OVER_EVERY_API_LIMIT)
    elsewhere = post(client, agent, "chat", big, origin="https://evil.example")
    assert elsewhere.status_code == 403 and "Access-Control-Allow-Origin" not in elsewhere
    unknown = post(client, agent, "chat", big, key="ag_nosuchkey")
    assert unknown.status_code == 404 and "Access-Control-Allow-Origin" not in unknown
    typed = post(client, agent, "chat", b"x", content_type="text/plain", origin="https://evil.example")
    assert typed.status_code == 403 and "Access-Control-Allow-Origin" not in typed


def test_the_schema_documents_413_and_415_on_every_widget_operation_with_a_body(client):
    schema = client.get("/api/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path in POSTS:
        responses = schema["paths"][f"/api/v1/agents/{{public_key}}/{path}"]["post"]["responses"]
        assert {"400", "413", "415"} <= set(responses), (path, sorted(responses))
        for status in ("413", "415"):
            shape = responses[status]["content"]["application/json"]["schema"]["$ref"]
            assert shape.endswith("/Error"), (path, status, shape)


@pytest.mark.django_db(transaction=True)
def test_on_the_images_server_the_413_is_readable_by_the_page_and_the_body_read_first(agent):
    """Through gunicorn: the chat is served by Django's ASGI handler, the widget's start by the WSGI one;
    both answer a 3 MB body with a 413 carrying the CORS headers, after reading it (no broken pipe)."""
    from django.conf import settings

    from tests.config.test_body_limits import database_url
    from tests.config.web_server import send_whole, web_server

    body = padded(OVER_EVERY_API_LIMIT)
    with web_server(
        test_run_id=settings.TEST_RUN_ID, database_url=database_url(), WEB_CONCURRENCY="1"
    ) as server:
        for path in ("chat", "widget/init"):
            status, headers, answer = send_whole(
                server.url, "POST", f"/api/v1/agents/{agent.public_key}/{path}", body, Origin=ORIGIN
            )
            assert status == 413, (path, answer[:300])
            assert headers.get("access-control-allow-origin") == ORIGIN, (path, headers)
            assert json.loads(answer)["error"]["limit"] == settings.WIDGET_MAX_REQUEST_BYTES
