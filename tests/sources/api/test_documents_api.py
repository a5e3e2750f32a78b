"""The documents API: PUT/GET/DELETE one document by the customer's id, list, batch; limits and tenancy."""

from __future__ import annotations

import pytest
from django.test import override_settings

from ingestion import tasks
from sources.models import Chunk, Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db

INSTALL = (
    "# Installing the kettle\n\nPlace the kettle on a flat surface. Fill it to the MAX line and press the "
    "switch once. The light turns blue while it boils."
)


def url(agent, external_id: str = "") -> str:
    base = f"/api/v1/agents/{agent.id}/documents"
    return f"{base}/{external_id}" if external_id else base


def run_index_queue(workspace) -> None:
    """What the index worker does with the queued documents, here in this process."""
    with workspace_scope(workspace.id):
        pending = list(Document.objects.filter(status="pending").values_list("id", flat=True))
    for document_id in pending:
        tasks.index_document(workspace_id=workspace.id, document_id=document_id)


def test_put_creates_a_pushed_document_queued_for_indexing(
    api, agent, workspace, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.put(
            url(agent, "guides/install.md"),
            {
                "markdown": INSTALL,
                "url": "https://docs.acme.example/guides/install",
                "metadata": {"type": "guide"},
            },
            format="json",
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["result"] == "created" and body["status"] == "pending"
    assert body["external_id"] == "guides/install.md"
    assert body["title"] == "Installing the kettle"  # the first heading, as no title was sent
    assert body["metadata"] == {"type": "guide"} and body["audiences"] == ["public"]
    assert len(callbacks) == 1  # the index job is published once the rows are committed
    run_index_queue(workspace)
    done = api.get(url(agent, "guides/install.md")).json()
    assert done["status"] == "done", done
    # It lives in the agent's one push source, listed with the other sources.
    source = api.get(f"/api/v1/sources/{body['source']}").json()
    assert source["kind"] == "push" and source["status"] == "done" and source["pages_done"] == 1
    hits = api.get("/api/v1/search", {"q": "how do I fill the kettle", "top_k": 1}).json()["results"]
    assert "MAX line" in hits[0]["text"]
    assert hits[0]["source"]["url"] == "https://docs.acme.example/guides/install"


def test_a_second_document_joins_the_same_push_source(api, agent, workspace):
    first = api.put(url(agent, "a"), {"title": "A", "text": "Alpha text."}, format="json").json()
    second = api.put(url(agent, "b"), {"title": "B", "text": "Beta text."}, format="json").json()
    assert first["source"] == second["source"]
    with workspace_scope(workspace.id):
        assert Source.objects.filter(agent=agent).count() == 1


def test_put_again_unchanged_answers_200_and_queues_nothing(
    api, agent, workspace, django_capture_on_commit_callbacks
):
    body = {"title": "Kettle", "text": "The kettle boils in two minutes."}
    api.put(url(agent, "kettle"), body, format="json")
    run_index_queue(workspace)
    with django_capture_on_commit_callbacks() as callbacks:
        again = api.put(url(agent, "kettle"), body, format="json")
    assert again.status_code == 200 and again.json()["result"] == "unchanged"
    assert again.json()["status"] == "done"
    assert callbacks == []
    changed = api.put(
        url(agent, "kettle"), {**body, "text": "The kettle boils in ninety seconds."}, format="json"
    )
    assert changed.status_code == 202 and changed.json()["result"] == "updated"
    assert changed.json()["status"] == "pending"


def test_html_is_converted_to_its_text(api, agent):
    html = (
        "<html><head><title>Descaling</title></head><body><nav>Home | Shop</nav><main><h1>Descaling</h1>"
        "<p>Descale the kettle every month with a cup of white vinegar and a cup of water.</p>"
        "<p>Boil, leave it for an hour, then rinse twice.</p></main></body></html>"
    )
    response = api.put(url(agent, "descaling"), {"html": html}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["title"] == "Descaling"
    with workspace_scope(agent.workspace_id):
        text = Document.objects.get(external_id="descaling").text
    assert "white vinegar" in text and "<p>" not in text


def test_delete_removes_the_document_and_its_chunks(api, agent, workspace):
    api.put(url(agent, "keep"), {"title": "Keep", "text": "Warranty lasts seven years."}, format="json")
    api.put(url(agent, "drop"), {"title": "Drop", "text": "The old model was discontinued."}, format="json")
    run_index_queue(workspace)
    with workspace_scope(workspace.id):
        dropped = Document.objects.get(external_id="drop")
        assert Chunk.objects.filter(document=dropped).exists()
    assert api.delete(url(agent, "drop")).status_code == 204
    assert api.delete(url(agent, "drop")).status_code == 404
    with workspace_scope(workspace.id):
        assert not Chunk.objects.filter(document_id=dropped.id).exists()
        assert list(Document.objects.values_list("external_id", flat=True)) == ["keep"]
    hits = api.get("/api/v1/search", {"q": "old model discontinued", "mode": "keyword"}).json()["results"]
    assert all("discontinued" not in h["text"] for h in hits)
    # The source goes with its last document.
    source_id = api.get(url(agent, "keep")).json()["source"]
    assert api.delete(url(agent, "keep")).status_code == 204
    assert not Source.unscoped.filter(id=source_id).exists()


def test_batch_answers_each_item_on_its_own(api, agent, settings):
    settings.TEXT_SOURCE_MAX_CHARS = 1000
    api.put(url(agent, "same"), {"title": "Same", "text": "Unchanged text."}, format="json")
    documents = [
        {"external_id": "new", "title": "New", "text": "A new document."},
        {"external_id": "same", "title": "Same", "text": "Unchanged text."},
        {"external_id": "no-content", "title": "Empty"},
        {"external_id": "huge", "title": "Huge", "text": "x" * 1001},
        {"external_id": "bad-meta", "text": "t", "metadata": {"agent_id": 7}},
        {"title": "No id", "text": "t"},
        "not an object",
        {"external_id": "new", "title": "Twice", "text": "Again."},
    ]
    response = api.post(f"{url(agent)}:batch", {"documents": documents}, format="json")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["status"] for r in results] == [202, 200, 400, 413, 400, 400, 400, 400]
    assert [r["result"] for r in results][:2] == ["created", "unchanged"]
    assert "text" in results[2]["error"]["fields"]["non_field_errors"][0]
    assert "limit is 1,000" in results[3]["error"]["fields"]["text"][0]
    assert "set by Grounded" in results[4]["error"]["fields"]["metadata"][0]
    assert "external_id" in results[5]["error"]["fields"]
    assert "JSON object" in results[6]["error"]["fields"]["non_field_errors"][0]
    assert "twice" in results[7]["error"]["fields"]["external_id"][0]
    assert response.json()["counts"] == {"created": 1, "updated": 0, "unchanged": 1, "invalid": 6}
    listed = api.get(url(agent)).json()["results"]
    assert [d["external_id"] for d in listed] == ["new", "same"]


def test_batch_and_document_limits_are_clear(api, agent, settings):
    settings.PUSH_BATCH_MAX_DOCUMENTS = 2
    settings.TEXT_SOURCE_MAX_CHARS = 100
    documents = [{"external_id": str(i), "text": "t"} for i in range(3)]
    too_many = api.post(f"{url(agent)}:batch", {"documents": documents}, format="json")
    assert too_many.status_code == 413
    assert "At most 2 documents" in too_many.json()["error"]["fields"]["documents"][0]
    too_long = api.put(url(agent, "long"), {"text": "y" * 101}, format="json")
    assert too_long.status_code == 413 and "limit is 100" in too_long.json()["error"]["fields"]["text"][0]
    malformed = api.post(f"{url(agent)}:batch", {"docs": []}, format="json")
    assert malformed.status_code == 400 and "documents" in malformed.json()["error"]["fields"]
    with override_settings(PUSH_MAX_REQUEST_BYTES=1000):
        big = api.put(url(agent, "big"), {"text": "z" * 2000}, format="json")
    assert big.status_code == 413
    with workspace_scope(agent.workspace_id):
        assert not Document.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "a", "html": "<p>b</p>"}, "non_field_errors"),
        ({"text": "   "}, "text"),
        ({"text": "a", "url": "ftp://files.example/a"}, "url"),
        ({"text": "a", "metadata": {"has space": 1}}, "metadata"),
        ({"text": "a", "metadata": {"nested": {"a": 1}}}, "metadata.nested"),
        ({"text": "a", "audiences": []}, "audiences"),
        ({"text": "a", "colour": "blue"}, "colour"),
    ],
)
def test_bad_documents_name_the_field_and_write_nothing(api, agent, body, field):
    response = api.put(url(agent, "doc"), body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"], response.json()
    assert Source.unscoped.filter(agent=agent).count() == 0


def test_listing_is_paginated_by_cursor_and_filters_by_metadata(api, agent):
    documents = [
        {
            "external_id": f"doc-{i:02}",
            "text": f"Document {i}.",
            "metadata": {"type": "faq" if i % 2 else "guide"},
        }
        for i in range(7)
    ]
    assert api.post(f"{url(agent)}:batch", {"documents": documents}, format="json").status_code == 200
    seen, page = [], api.get(url(agent), {"page_size": 3}).json()
    while True:
        seen += [d["external_id"] for d in page["results"]]
        if not page["next"]:
            break
        page = api.get(page["next"]).json()
    assert seen == [f"doc-{i:02}" for i in range(7)]
    guides = api.get(url(agent), {"metadata": '{"type": "guide"}'}).json()["results"]
    assert [d["external_id"] for d in guides] == ["doc-00", "doc-02", "doc-04", "doc-06"]
    assert api.get(url(agent), {"metadata": "[1]"}).status_code == 400
    assert api.get(url(agent), {"status": "sideways"}).status_code == 400


def test_external_ids_are_per_agent(api, agent, workspace):
    from agents.models import Agent

    with workspace_scope(workspace.id):
        second = Agent.objects.create(name="Sales bot")
    api.put(url(agent, "faq"), {"title": "Support FAQ", "text": "Support answers."}, format="json")
    api.put(url(second, "faq"), {"title": "Sales FAQ", "text": "Sales answers."}, format="json")
    assert api.get(url(agent, "faq")).json()["title"] == "Support FAQ"
    assert api.get(url(second, "faq")).json()["title"] == "Sales FAQ"
    assert api.delete(url(second, "faq")).status_code == 204
    assert api.get(url(agent, "faq")).status_code == 200


def test_another_workspace_sees_nothing_and_changes_nothing(api, outsider_api, agent, other_agent):
    api.put(url(agent, "secret"), {"title": "Ours", "text": "Our internal notes."}, format="json")
    # The outsider addresses our agent: every verb is a 404, as for an agent that doesn't exist.
    assert outsider_api.get(url(agent)).status_code == 404
    assert outsider_api.get(url(agent, "secret")).status_code == 404
    assert outsider_api.put(url(agent, "secret"), {"text": "Overwritten."}, format="json").status_code == 404
    assert outsider_api.delete(url(agent, "secret")).status_code == 404
    batch = outsider_api.post(
        f"{url(agent)}:batch", {"documents": [{"external_id": "x", "text": "t"}]}, format="json"
    )
    assert batch.status_code == 404
    assert api.get(url(agent, "secret")).json()["title"] == "Ours"
    # The same id in their own agent is their own document.
    theirs = outsider_api.put(
        url(other_agent, "secret"), {"title": "Theirs", "text": "Theirs."}, format="json"
    )
    assert theirs.status_code == 202
    assert api.get(url(other_agent, "secret")).status_code == 404
    assert api.get(url(agent, "secret")).json()["title"] == "Ours"
    assert api.put("/api/v1/agents/999999/documents/x", {"text": "t"}, format="json").status_code == 404


def test_members_may_read_but_not_push(client, member, agent):
    client.force_login(member)
    assert client.get(url(agent)).status_code == 200
    response = client.put(url(agent, "x"), {"text": "t"}, content_type="application/json")
    assert response.status_code == 403


def test_push_sources_are_not_made_through_the_sources_api(api, agent):
    response = api.post("/api/v1/sources", {"kind": "push", "title": "x", "agent": agent.id}, format="json")
    assert response.status_code == 400 and "documents" in response.json()["error"]["fields"]["kind"][0]


def test_the_schema_describes_the_documents_api(api):
    schema = api.get("/api/v1/schema", {"format": "json"}).json()
    paths = schema["paths"]
    one = paths["/api/v1/agents/{agent_id}/documents/{external_id}"]
    assert {"get", "put", "delete"} <= set(one)
    assert {"202", "200", "400", "404", "413"} <= set(one["put"]["responses"])
    assert "post" in paths["/api/v1/agents/{agent_id}/documents:batch"]
    assert "get" in paths["/api/v1/agents/{agent_id}/documents"]


def test_the_push_source_shows_in_the_web_ui_with_the_others(api, client, owner, agent):
    api.put(url(agent, "faq"), {"title": "FAQ", "text": "Answers."}, format="json")
    client.force_login(owner)
    page = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert "Pushed documents" in page and "Sent through the documents API" in page


@pytest.mark.parametrize("external_id", ["line\nbreak", "carriage\rreturn", "tab\there", " padded"])
def test_an_id_we_refuse_is_the_same_400_by_put_and_in_a_batch(api, outsider_api, agent, external_id):
    from urllib.parse import quote

    put = api.put(url(agent, quote(external_id, safe="/")), {"text": "Some text."}, format="json")
    assert put.status_code == 400, put.content  # a line break missed the route: 404
    batch = api.post(
        f"{url(agent)}:batch",
        {"documents": [{"external_id": external_id, "text": "Some text."}]},
        format="json",
    )
    [item] = batch.json()["results"]
    assert item["status"] == 400 and put.json()["error"] == item["error"]
    assert list(put.json()["error"]["fields"]) == ["external_id"]
    # Another workspace's agent is a 404 whatever the id.
    assert (
        outsider_api.put(url(agent, quote(external_id, safe="/")), {"text": "t"}, format="json").status_code
        == 404
    )
    assert Source.unscoped.filter(agent=agent).count() == 0


def test_any_id_we_accept_is_reachable_by_its_path(api, agent):
    from urllib.parse import quote

    for external_id in ("guides/a b.md", "what?#100%", "ünïcode/ключ", "a//b"):
        path = url(agent, quote(external_id, safe="/"))
        assert api.put(path, {"text": "Some text."}, format="json").status_code == 202, external_id
        assert api.get(path).json()["external_id"] == external_id
        assert api.delete(path).status_code == 204


def test_html_is_titled_by_its_title_element_before_its_heading(api, outsider_api, agent):
    body = "<p>" + "Fill the kettle to the MAX line and press the switch once. " * 5 + "</p>"
    html = f"<html><head><title>Kettle guide</title></head><body><article><h1>Installing</h1>{body}</article>"
    assert api.put(url(agent, "titled"), {"html": html}, format="json").json()["title"] == "Kettle guide"
    # Without a <title>, trafilatura's guess (the lone heading) rather than the id.
    untitled = f"<html><body><article><h1>Installing</h1>{body}</article></body></html>"
    assert api.put(url(agent, "untitled"), {"html": untitled}, format="json").json()["title"] == "Installing"
    # A title sent with the document wins; an SVG's <title> is not the page's.
    svg = f"<html><body><svg><title>Icon</title></svg><h1>Installing</h1>{body}</body></html>"
    assert api.put(url(agent, "svg"), {"html": svg}, format="json").json()["title"] != "Icon"
    sent = api.put(url(agent, "sent"), {"html": html, "title": "Mine"}, format="json")
    assert sent.json()["title"] == "Mine"
    assert outsider_api.get(url(agent, "titled")).status_code == 404
