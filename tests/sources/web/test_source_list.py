"""The sources list past a page: search, filters, sort, pages, and bulk actions through the lifecycle."""

from __future__ import annotations

import re

import pytest

from agents.models import Agent
from sources.models import Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


@pytest.fixture
def many(workspace, agent):
    """61 sources: 40 ready texts, 15 failed pages, 6 crawling sitemaps."""
    with workspace_scope(workspace.id):
        for i in range(40):
            Source.objects.create(
                agent=agent, kind="text", title=f"Note {i:02d}", status="done", chunks_count=1
            )
        for i in range(15):
            Source.objects.create(
                agent=agent,
                kind="url",
                title=f"Page {i:02d}",
                config={"url": f"https://acme.example/help/{i}"},
                status="failed",
            )
        for i in range(6):
            Source.objects.create(
                agent=agent,
                kind="sitemap",
                title=f"Site {i}",
                config={"url": f"https://docs{i}.example/sitemap.xml"},
                status="crawling",
            )


def titles(html: str) -> list[str]:
    return re.findall(r'data-field="title">([^<]+)<', html)


def test_pages_of_fifty_with_the_counts_of_every_source(client, owner, agent, many):
    client.force_login(owner)
    first = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert len(titles(first)) == 50
    assert "1\u201350 of 61" in first and 'rel="next"' in first
    assert 'data-count="total">61<' in first and 'data-count="failed">15<' in first
    second = client.get(f"/app/agents/{agent.id}/sources?page=2").content.decode()
    assert len(titles(second)) == 11 and "51\u201361 of 61" in second
    assert not set(titles(first)) & set(titles(second))
    assert len(titles(client.get(f"/app/agents/{agent.id}/sources?page=99").content.decode())) == 11


def test_search_filters_and_sort(client, owner, agent, many):
    client.force_login(owner)

    def shown(query):
        return titles(client.get(f"/app/agents/{agent.id}/sources?{query}").content.decode())

    assert shown("q=note 1") == [f"Note {i}" for i in range(19, 9, -1)]  # newest first
    assert shown("q=docs3.example") == ["Site 3"]  # the address is searched too
    assert len(shown("kind=sitemap")) == 6
    assert len(shown("status=failed")) == 15 and len(shown("status=active")) == 6
    assert shown("kind=url&status=failed&sort=title")[:2] == ["Page 00", "Page 01"]
    assert shown("q=nothing-like-this") == []
    assert shown("sort=nonsense&status=bogus")[:1] == ["Site 5"]  # unknown values are ignored
    # The live refresh asks for the same page of the same list.
    page = client.get(f"/app/agents/{agent.id}/sources?kind=sitemap").content.decode()
    assert f'data-json-url="/app/agents/{agent.id}/sources.json?kind=sitemap"' in page
    data = client.get(f"/app/agents/{agent.id}/sources.json?kind=sitemap").json()
    assert len(data["rows"]) == 6 and data["matched"] == 6 and data["counts"]["total"] == 61


def test_bulk_actions_go_through_the_lifecycle_and_skip_what_they_cannot_help(
    client, owner, workspace, agent, django_capture_on_commit_callbacks
):
    with workspace_scope(workspace.id):
        ready = Source.objects.create(
            agent=agent, kind="text", title="Ready", status="done", config={"content": "x"}
        )
        corrupt = Source.objects.create(
            agent=agent, kind="upload", title="Broken.pdf", status="failed", state={"reupload_needed": True}
        )
        busy = Source.objects.create(agent=agent, kind="text", title="Busy", status="indexing")
        failed = Source.objects.create(
            agent=agent, kind="url", title="Page", status="failed", config={"url": "https://acme.example/a"}
        )
        Document.objects.create(
            source=failed, url="https://acme.example/a", status="failed", error="Timed out"
        )
    client.force_login(owner)
    bulk = f"/app/agents/{agent.id}/sources/bulk"
    with django_capture_on_commit_callbacks():
        response = client.post(
            bulk,
            {"action": "reindex", "ids": [ready.id, corrupt.id, busy.id]},
            HTTP_ACCEPT="application/json",
        )
    assert response.json()["done"] == 1 and response.json()["skipped"] == 2
    with django_capture_on_commit_callbacks():
        response = client.post(
            bulk, {"action": "retry", "ids": [failed.id, ready.id]}, HTTP_ACCEPT="application/json"
        )
    assert response.json()["done"] == 1
    with workspace_scope(workspace.id):
        assert Document.objects.get(source=failed).status == "pending"
        statuses = dict(Source.objects.values_list("title", "status"))
    assert statuses["Broken.pdf"] == "failed" and statuses["Busy"] == "indexing"
    response = client.post(bulk, {"action": "delete", "ids": [corrupt.id, busy.id]})
    assert response.status_code == 302
    with workspace_scope(workspace.id):
        assert set(Source.objects.values_list("title", flat=True)) == {"Ready", "Page"}
    assert (
        client.post(
            bulk, {"action": "explode", "ids": [ready.id]}, HTTP_ACCEPT="application/json"
        ).status_code
        == 400
    )


def test_bulk_actions_reach_only_the_agents_own_sources(
    client, owner, member, outsider, workspace, other_workspace, agent
):
    with workspace_scope(other_workspace.id):
        theirs_agent = Agent.objects.create(name="Theirs")
        theirs = Source.objects.create(agent=theirs_agent, kind="text", title="Theirs", status="done")
    with workspace_scope(workspace.id):
        ours = Source.objects.create(agent=agent, kind="text", title="Ours", status="done")
    bulk = f"/app/agents/{agent.id}/sources/bulk"
    client.force_login(owner)
    response = client.post(bulk, {"action": "delete", "ids": [theirs.id]}, HTTP_ACCEPT="application/json")
    assert response.json()["done"] == 0
    client.force_login(member)
    assert client.post(bulk, {"action": "delete", "ids": [ours.id]}).status_code == 403
    client.force_login(outsider)
    assert client.post(bulk, {"action": "delete", "ids": [ours.id]}).status_code == 404
    assert Source.unscoped.filter(id__in=[theirs.id, ours.id]).count() == 2


def test_the_page_keeps_polling_when_a_job_ends_between_the_rows_and_the_counts(
    client, owner, workspace, agent, monkeypatch
):
    """The rows and the counts are two queries. A job ending between them (the worker's 35 ms reindex in
    the suite) left a row "indexing" beside counts with nothing in progress, and the page stopped polling
    with that row stuck. The job ending is made to happen exactly there."""
    from sources import selectors

    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="text", title="Returns policy", status="indexing")
    counts = selectors.agent_source_counts

    def job_ends_first(**kwargs):
        with workspace_scope(workspace.id):
            Source.objects.filter(id=source.id).update(status="failed")
        return counts(**kwargs)

    monkeypatch.setattr(selectors, "agent_source_counts", job_ends_first)
    client.force_login(owner)
    data = client.get(f"/app/agents/{agent.id}/sources.json").json()
    assert [row["status"] for row in data["rows"]] == ["indexing"] and data["counts"]["active"] == 0
    assert data["active"] is True  # so the next poll shows "failed"
    data = client.get(f"/app/agents/{agent.id}/sources.json").json()
    assert [row["status"] for row in data["rows"]] == ["failed"] and data["active"] is False
    with workspace_scope(workspace.id):
        Source.objects.filter(id=source.id).update(status="indexing")
    page = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert 'data-active="1"' in page  # the first draw polls on the same rule
