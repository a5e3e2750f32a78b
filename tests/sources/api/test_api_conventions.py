"""What every endpoint of the REST API shares: one error shape, per-key throttling with its headers,
Idempotency-Key on POSTs, and a schema that validates without a warning."""

from __future__ import annotations

import time
from unittest import mock

import pytest
import redis
from django.core.management import call_command
from django.test import override_settings
from rest_framework.test import APIClient

from config.redis_cache import shares_redis_url
from sources.models import Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def _text(agent, **extra):
    return {
        "kind": "text",
        "title": "Returns",
        "content": "Return items within 30 days.",
        "agent": agent.id,
        **extra,
    }


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) >= {"error"} and body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


# --- the error shape -------------------------------------------------------------------------------------


def test_a_field_error_names_the_field_under_fields(api, agent):
    error = _error(api.post("/api/v1/sources", _text(agent, content=""), format="json"), 400, "invalid")
    assert "content" in error["fields"] and isinstance(error["fields"]["content"], list)


def test_not_found_unauthenticated_forbidden_and_bad_method_share_the_shape(api, member, agent):
    _error(api.get("/api/v1/sources/999999"), 404, "not_found")
    _error(APIClient().get("/api/v1/sources"), 401, "not_authenticated")
    _error(
        APIClient().get("/api/v1/sources", HTTP_AUTHORIZATION="Bearer gk_nope"), 401, "authentication_failed"
    )
    _error(api.put("/api/v1/search"), 405, "method_not_allowed")
    client = APIClient()
    client.force_login(member)
    _error(client.post("/api/v1/sources", _text(agent), format="json"), 403, "permission_denied")
    raw = api.post("/api/v1/sources", data="{not json", content_type="application/json")
    _error(raw, 400, "malformed_request")


def test_an_unknown_api_address_answers_json_and_the_web_ui_keeps_its_pages(api, client):
    _error(api.get("/api/v1/no-such-thing"), 404, "not_found")
    assert client.get("/app/no-such-page").get("Content-Type", "").startswith("text/html")


def test_widget_errors_share_the_shape(client, agent):
    error = _error(
        client.post(f"/api/v1/agents/{agent.public_key}/chat", {}, content_type="application/json"),
        403,
        "permission_denied",
    )
    assert "not allowed" in error["message"]
    refused = client.post(
        f"/api/v1/agents/{agent.public_key}/chat",
        {"message": "hi"},
        content_type="application/json",
        HTTP_ORIGIN="https://acme.example",
        HTTP_X_VISITOR_TOKEN="forged.token",
    )
    _error(refused, 401, "invalid_visitor_token")


# --- throttling ------------------------------------------------------------------------------------------


@override_settings(API_RATE_PER_MINUTE=3)
def test_the_key_is_throttled_with_rate_limit_headers_and_a_clear_refusal(api, outsider_api, agent):
    answers = [api.get("/api/v1/sources") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert [a["RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0"]
    assert all(a["RateLimit-Limit"] == "3" for a in answers)
    refused = answers[-1]
    error = _error(refused, 429, "rate_limited")
    assert error["limit"] == 3 and error["usage"] == 4
    wait = int(refused["Retry-After"])
    assert 0 < wait <= 60 and 0 <= int(refused["RateLimit-Reset"]) <= 60
    assert abs(error["reset"] - (time.time() + wait)) <= 2
    # Nothing was written by a refused write, and another workspace's key has its own allowance.
    assert api.post("/api/v1/sources", _text(agent), format="json").status_code == 429
    with workspace_scope(agent.workspace_id):
        assert not Source.objects.exists()
    assert outsider_api.get("/api/v1/sources").status_code == 200


@override_settings(API_RATE_PER_MINUTE=4)
def test_searches_count_with_every_other_request_and_a_refused_one_is_not_answered(api, outsider_api, agent):
    """A search counts its rate in its cache lookup's round trip: hits, misses and invalid searches count,
    share the key's allowance with the other endpoints, and a search over it is refused, even a cached one."""
    miss, hit = api.get("/api/v1/search?q=returns"), api.get("/api/v1/search?q=returns")
    assert (miss["X-Search-Cache"], hit["X-Search-Cache"]) == ("miss", "hit")
    invalid, other = api.get("/api/v1/search?q=returns&top_k=0"), api.get("/api/v1/sources")
    refused, refused_new = api.get("/api/v1/search?q=returns"), api.get("/api/v1/search?q=another")
    answers = [miss, hit, invalid, other, refused, refused_new]
    assert [a.status_code for a in answers] == [200, 200, 400, 200, 429, 429]
    assert [a["RateLimit-Remaining"] for a in answers] == ["3", "2", "1", "0", "0", "0"]
    error = _error(refused, 429, "rate_limited")
    assert error["limit"] == 4 and error["usage"] == 5 and "X-Search-Cache" not in refused
    assert int(refused["Retry-After"]) > 0
    assert outsider_api.get("/api/v1/search?q=returns").status_code == 200


def test_a_cached_search_is_one_round_trip_to_redis(api, agent):
    assert api.get("/api/v1/search?q=returns")["X-Search-Cache"] == "miss"
    sent = []
    original = redis.connection.AbstractConnection.send_packed_command

    def counted(self, command, check_health=True):
        sent.append(command)
        return original(self, command, check_health)

    with mock.patch.object(redis.connection.AbstractConnection, "send_packed_command", counted):
        hit = api.get("/api/v1/search?q=returns")
    assert hit["X-Search-Cache"] == "hit" and hit["RateLimit-Remaining"]
    assert len(sent) == 1  # the rate's INCR and EXPIRE and the cache's MGET, in one pipeline


def test_searches_are_counted_on_their_own_when_the_cache_lives_elsewhere(api, settings):
    settings.API_RATE_PER_MINUTE = 1
    elsewhere = settings.CACHES["default"]["LOCATION"].rsplit("/", 1)[0] + "/13"
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": elsewhere}}
    assert not shares_redis_url()
    answers = [api.get("/api/v1/search?q=returns") for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 429]
    assert answers[0]["X-Search-Cache"] == "miss" and answers[0]["RateLimit-Remaining"] == "0"


@override_settings(
    API_RATE_PER_MINUTE=2, API_RATE_LIMIT_RESOLVER="tests.sources.api.test_api_conventions.plan_limit"
)
def test_a_resolver_sets_a_workspaces_own_limit(api):
    # plan_limit() gives 5 to this workspace (a plan's API requests per minute); the setting says 2.
    assert [api.get("/api/v1/sources").status_code for _ in range(6)] == [200] * 5 + [429]


def plan_limit(workspace) -> int | None:
    return 5 if workspace.slug == "acme" else None


def test_the_widget_api_is_not_counted_against_api_keys(client, agent, settings):
    settings.API_RATE_PER_MINUTE = 1
    for _ in range(3):
        response = client.post(
            f"/api/v1/agents/{agent.public_key}/widget/init",
            {},
            content_type="application/json",
            HTTP_ORIGIN="https://acme.example",
        )
        assert response.status_code == 200 and "RateLimit-Limit" not in response


# --- cursors ---------------------------------------------------------------------------------------------


def _cursor(query: bytes) -> str:
    import base64

    return base64.b64encode(query).decode()


@pytest.mark.parametrize(
    ("cursor", "pushed_too"),
    [
        (_cursor(b"p=abc"), False),  # a position of the wrong type for an id: the query failed with a 500
        (_cursor(b"p=99999999999999999999999"), False),  # beyond a bigint
        (_cursor(b"o=-1"), True),
        ("not base64 at all!", True),
        ("w6k=", True),  # base64 of non-ASCII
    ],
)
def test_a_cursor_we_did_not_give_out_is_a_400_naming_cursor(api, agent, cursor, pushed_too):
    api.post("/api/v1/sources", _text(agent), format="json")
    source_id = api.get("/api/v1/sources").json()["results"][0]["id"]
    lists = ["/api/v1/sources", "/api/v1/agents", f"/api/v1/sources/{source_id}/documents"]
    # Pushed documents are ordered by their external id: any text is a position there.
    lists += [f"/api/v1/agents/{agent.id}/documents"] if pushed_too else []
    for path in lists:
        error = _error(api.get(path, {"cursor": cursor}), 400, "invalid")
        assert list(error["fields"]) == ["cursor"] and "next" in error["fields"]["cursor"][0], path


def test_a_pushed_documents_cursor_with_a_nul_is_a_400(api, agent):
    api.put(f"/api/v1/agents/{agent.id}/documents/a", {"text": "A."}, format="json")
    _error(api.get(f"/api/v1/agents/{agent.id}/documents", {"cursor": _cursor(b"p=a%00b")}), 400, "invalid")


def test_the_cursors_we_give_out_still_page_through_and_an_outsiders_list_is_a_404(api, outsider_api, agent):
    for title in ("One", "Two", "Three"):
        api.post("/api/v1/sources", _text(agent, title=title), format="json")
    page = api.get("/api/v1/sources", {"page_size": 2}).json()
    rest = api.get(page["next"]).json()
    assert [s["title"] for s in page["results"] + rest["results"]] == ["Three", "Two", "One"]
    assert api.get(rest["previous"]).json()["results"] == page["results"]
    source_id = page["results"][0]["id"]
    _error(
        outsider_api.get(f"/api/v1/sources/{source_id}/documents", {"cursor": _cursor(b"p=abc")}),
        404,
        "not_found",
    )


# --- idempotency -----------------------------------------------------------------------------------------


def test_a_retried_post_with_the_same_key_answers_the_first_result(api, agent):
    first = api.post("/api/v1/sources", _text(agent), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = api.post("/api/v1/sources", _text(agent), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    with workspace_scope(agent.workspace_id):
        assert Source.objects.count() == 1
    other_body = api.post(
        "/api/v1/sources", _text(agent, title="Other"), format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    _error(other_body, 422, "idempotency_key_reused")
    fresh = api.post(
        "/api/v1/sources", _text(agent, title="Other"), format="json", HTTP_IDEMPOTENCY_KEY="k-2"
    )
    assert fresh.status_code == 201 and fresh.json()["id"] != first.json()["id"]


def test_the_same_key_with_another_body_of_the_same_length_is_refused_whatever_its_size(api, agent):
    # Bodies over 1 MB were told apart by their length and type only, so another body of the same length
    # was answered with the first one's result as if it were a retry.
    for size, key in ((30, "small"), (999_990, "large")):  # the large body is just over 1 MB
        first = api.post(
            "/api/v1/sources", _text(agent, content="a" * size), format="json", HTTP_IDEMPOTENCY_KEY=key
        )
        assert first.status_code == 201, first.content[:300]
        other = api.post(
            "/api/v1/sources", _text(agent, content="b" * size), format="json", HTTP_IDEMPOTENCY_KEY=key
        )
        _error(other, 422, "idempotency_key_reused")
        again = api.post(
            "/api/v1/sources", _text(agent, content="a" * size), format="json", HTTP_IDEMPOTENCY_KEY=key
        )
        assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"


def test_an_upload_retried_with_its_key_is_told_apart_from_another_file_of_the_same_size(api, agent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    def upload(content: bytes):
        file = SimpleUploadedFile("notes.txt", content, content_type="text/plain")
        return api.post(
            "/api/v1/sources",
            {"agent": agent.id, "file": file},
            format="multipart",
            HTTP_IDEMPOTENCY_KEY="u-1",
        )

    first = upload(b"Opening hours: 9 to 5." * 40_000)  # 880 kB: a file, in a body over 1 MB once encoded
    assert first.status_code == 201, first.content[:300]
    _error(upload(b"Closing hours: 9 to 5." * 40_000), 422, "idempotency_key_reused")
    again = upload(b"Opening hours: 9 to 5." * 40_000)
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()


def test_an_idempotency_key_too_long_is_a_field_error_naming_the_header(api, outsider_api, agent):
    error = _error(
        api.post("/api/v1/sources", _text(agent), format="json", HTTP_IDEMPOTENCY_KEY="k" * 256),
        400,
        "invalid",
    )
    assert list(error["fields"]) == ["Idempotency-Key"] and "255" in error["fields"]["Idempotency-Key"][0]
    assert (
        api.post("/api/v1/sources", _text(agent), format="json", HTTP_IDEMPOTENCY_KEY="k" * 255).status_code
        == 201
    )
    # An outsider's key of any length never reaches our sources.
    assert outsider_api.get(f"/api/v1/sources/{Source.unscoped.get(agent=agent).id}").status_code == 404


def test_an_idempotency_key_belongs_to_its_workspace(api, outsider_api, agent, other_agent):
    mine = api.post("/api/v1/sources", _text(agent), format="json", HTTP_IDEMPOTENCY_KEY="shared")
    theirs = outsider_api.post(
        "/api/v1/sources", _text(other_agent), format="json", HTTP_IDEMPOTENCY_KEY="shared"
    )
    assert mine.status_code == theirs.status_code == 201 and mine.json()["id"] != theirs.json()["id"]


def test_a_request_still_running_is_not_run_twice(api, agent, settings):
    import hashlib

    import redis

    key = f"{settings.REDIS_KEY_PREFIX}idempotency:{agent.workspace_id}:{hashlib.sha256(b'busy').hexdigest()}"
    body = _text(agent)
    first = api.post("/api/v1/sources", body, format="json", HTTP_IDEMPOTENCY_KEY="busy")
    assert first.status_code == 201
    stored = redis.Redis.from_url(settings.REDIS_URL).get(key)
    assert stored is not None and b'"done"' in stored
    # Mark it as still running, as a request in flight leaves it.
    redis.Redis.from_url(settings.REDIS_URL).set(key, stored.replace(b'"done"', b'"pending"'))
    retry = api.post("/api/v1/sources", body, format="json", HTTP_IDEMPOTENCY_KEY="busy")
    _error(retry, 409, "idempotency_in_progress")
    with workspace_scope(agent.workspace_id):
        assert Source.objects.count() == 1


def test_the_same_address_twice_answers_409_with_the_existing_source(api, agent):
    body = {"kind": "url", "url": "http://127.0.0.1:9/page", "agent": agent.id}
    first = api.post("/api/v1/sources", body, format="json")
    assert first.status_code == 201, first.content
    error = _error(api.post("/api/v1/sources", body, format="json"), 409, "duplicate")
    assert error["existing_id"] == first.json()["id"]
    # Another kind at the same address is another thing (a page is not a sitemap).
    assert api.post("/api/v1/sources", {**body, "kind": "sitemap"}, format="json").status_code == 201


def test_the_same_page_spelt_differently_is_the_same_address(api, outsider_api, agent, other_agent):
    first = api.post(
        "/api/v1/sources", {"kind": "url", "url": "http://127.0.0.1/page", "agent": agent.id}, format="json"
    )
    assert first.status_code == 201, first.content
    for spelling in ("HTTP://127.0.0.1/page", "http://127.0.0.1:80/page", "http://127.0.0.1/page#returns"):
        body = {"kind": "url", "url": spelling, "agent": agent.id}
        error = _error(api.post("/api/v1/sources", body, format="json"), 409, "duplicate")
        assert error["existing_id"] == first.json()["id"] and "http://127.0.0.1/page" in error["message"]
    # Another page of the site, and the same page in another workspace, are not duplicates.
    other_page = {"kind": "url", "url": "http://127.0.0.1/Page", "agent": agent.id}
    assert api.post("/api/v1/sources", other_page, format="json").status_code == 201
    theirs = {"kind": "url", "url": "HTTP://127.0.0.1/page", "agent": other_agent.id}
    assert outsider_api.post("/api/v1/sources", theirs, format="json").status_code == 201
    assert outsider_api.get(f"/api/v1/sources/{first.json()['id']}").status_code == 404


# --- the schema ------------------------------------------------------------------------------------------


def test_the_schema_validates_without_warnings(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = target.read_text()
    assert "bearerFormat: gk_<prefix>_<secret>" in schema
    assert "    Citation:" in schema and "    SearchResult:" in schema and "    Error:" in schema


def test_the_schema_documents_search_as_an_object_and_every_operation_has_a_response(api):
    import yaml

    schema = yaml.safe_load(api.get("/api/v1/schema").content)
    search = schema["paths"]["/api/v1/search"]["get"]["responses"]["200"]["content"]["application/json"]
    assert search["schema"]["$ref"].endswith("/SearchResult")
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert any(code.startswith("2") for code in operation["responses"]), (path, method)
    assert set(schema["components"]["securitySchemes"]) == {"apiKey", "session"}


def test_the_schema_lists_every_status_the_api_answers(api, outsider_api, agent):
    import yaml

    paths = yaml.safe_load(api.get("/api/v1/schema").content)["paths"]

    def statuses(path: str, method: str) -> set[int]:
        return {int(code) for code in paths[path][method]["responses"]}

    documents = "/api/v1/agents/{agent_id}/documents"
    assert {402, 413, 415} <= statuses(documents + "/{external_id}", "put")  # 402 was missing
    assert {402, 409, 413, 415, 422} <= statuses(documents + ":batch", "post")
    assert {409, 413, 415, 422} <= statuses("/api/v1/sources", "post")  # 415 and 422 were missing
    for path in ("/api/v1/sources", "/api/v1/agents", "/api/v1/sources/{source_id}/documents", documents):
        assert 400 in statuses(path, "get"), path  # a cursor we did not give out
    # Every workspace operation (not the widget's, keyed by a public key) lists what its machinery answers.
    for path, operations in paths.items():
        if "{public_key}" in path:
            continue
        for method, operation in operations.items():
            expected = {401, 403, 429} | ({404} if "{" in path else set())
            expected |= {400, 413, 415} if "requestBody" in operation else set()
            expected |= {409, 422} if method == "post" else set()
            assert expected <= statuses(path, method), (method, path, expected - statuses(path, method))
    # What the schema says is what the API answers: a 415 and a 422, in the error shape.
    _error(api.post("/api/v1/sources", data="text", content_type="text/plain"), 415, "unsupported_media_type")
    api.post("/api/v1/sources", _text(agent), format="json", HTTP_IDEMPOTENCY_KEY="s-1")
    reused = api.post("/api/v1/sources", _text(agent, title="B"), format="json", HTTP_IDEMPOTENCY_KEY="s-1")
    _error(reused, 422, "idempotency_key_reused")
    _error(
        outsider_api.put(f"/api/v1/agents/{agent.id}/documents/a", {"text": "t"}, format="json"),
        404,
        "not_found",
    )


def test_the_browsable_docs_are_served(client):
    assert client.get("/api/v1/docs").status_code == 200
    assert client.get("/api/v1/redoc").status_code == 200


# --- the key's lookup ------------------------------------------------------------------------------------


def test_the_keys_written_out_lookup_gives_what_the_orm_gives(workspace):
    """The API key and its workspace come from one statement written out (sources/api/auth.py), not the
    ORM: every field of both must be what the ORM loads, so a field added later cannot come back wrong."""
    from sources.api.auth import key_with_workspace
    from sources.models import ApiKey, Workspace
    from sources.services import api_key_create

    key, raw = api_key_create(workspace=workspace, name="lookup")
    ApiKey.unscoped.filter(id=key.id).update(last_used_at="2026-01-02T03:04:05Z")
    Workspace.objects.filter(id=workspace.id).update(bm25_k1=0.9, bm25_b=0.6)
    loaded = key_with_workspace(key.prefix)
    expected = ApiKey.unscoped.select_related("workspace").get(id=key.id)
    pairs = ((ApiKey, loaded, expected), (Workspace, loaded.workspace, expected.workspace))
    for model, ours, theirs in pairs:
        for field in model._meta.concrete_fields:
            assert getattr(ours, field.attname) == getattr(theirs, field.attname), field.name
            assert type(getattr(ours, field.attname)) is type(getattr(theirs, field.attname)), field.name
    assert loaded.matches(raw) and loaded.workspace.bm25_k1 == 0.9
    assert key_with_workspace("0" * ApiKey.PREFIX_LENGTH) is None


# --- the search API's passages, written without DRF's fields ----------------------------------------------


def test_a_passage_is_written_as_its_serializer_writes_it():
    """The search API builds its passages directly (sources/api/serializers.py passage_json); the schema
    documents PassageSerializer's. Both must give the same, with and without a URL."""
    from retrieval.services import Passage
    from sources.api.serializers import PassageSerializer, passage_json

    fields = {name: None for name in Passage.__dataclass_fields__}
    for url in ("https://acme.example/returns", "", None):
        passage = Passage(
            **{**fields, "chunk_id": "a1b2", "text": "Return within 30 days.", "score": 0.5, "source_id": 7,
               "source_title": "Returns", "url": url}
        )  # fmt: skip
        assert passage_json(passage) == PassageSerializer(passage).data
