"""The API of skipped pages: a source counts them apart from failures (by reason), its documents list them
with their reason and the size of their text, one can be indexed anyway, and a source's keep_short_pages is
set at creation or by PATCH. An outsider gets 404 for all of it."""

from __future__ import annotations

import pytest

from sources.models import Document, Source
from sources.tenancy import workspace_scope
from tests.factories import SKIPPED_MESSAGE, make_skipped_site, skipped_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def site_source(workspace, agent):
    """A crawled site: 2 indexed pages, 3 skipped (2 too short, 1 a list of links), 1 failed."""
    return make_skipped_site(
        workspace,
        agent,
        title="Docs",
        config={"url": "http://docs.test/", "keep_short_pages": False},
        short_chars=17,
        detail=True,
    )


def test_a_source_counts_skipped_pages_apart_from_failures(api, site_source):
    body = api.get(f"/api/v1/sources/{site_source.id}").json()
    assert (body["pages_done"], body["pages_skipped"], body["pages_failed"], body["pages_left"]) == (
        2,
        3,
        1,
        0,
    )
    assert body["pages_skipped_by_reason"] == {"too_short": 2, "link_list": 1}
    listed = api.get("/api/v1/sources").json()["results"][0]
    assert listed["pages_skipped"] == 3


def test_skipped_pages_are_listed_with_their_reason_and_size(api, site_source):
    response = api.get(f"/api/v1/sources/{site_source.id}/documents", {"status": "skipped"})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    first = body["results"][0]
    assert (first["status"], first["skip_reason"], first["skip_label"], first["skipped_chars"]) == (
        "skipped",
        "too_short",
        "too little text",
        42,
    )
    assert first["error"] == SKIPPED_MESSAGE and first["failure_class"] == "" and first["keep_short"] is False
    assert body["results"][2]["skip_label"] == "only a list of links"
    failed = api.get(f"/api/v1/sources/{site_source.id}/documents", {"status": "failed"}).json()
    assert [d["url"] for d in failed["results"]] == ["http://docs.test/gone"]  # skipped pages are not failed


def test_index_anyway_queues_the_page_and_keeps_the_decision(
    api, site_source, django_capture_on_commit_callbacks
):
    page = skipped_page(site_source)
    url = f"/api/v1/sources/{site_source.id}/documents/{page.id}/index-anyway"
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post(url)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["id"] == page.id and body["status"] == "pending" and body["keep_short"] is True
    assert len(callbacks) == 1  # its page job is published once the transaction commits
    page = skipped_page(site_source)
    assert (page.status, page.keep_short, page.skip_reason, page.error) == ("pending", True, "", "")
    assert skipped_page(site_source, 1).status == "skipped"  # only that page
    # Its source is busy now: a second page waits until it has finished.
    other = skipped_page(site_source, 1)
    refused = api.post(f"/api/v1/sources/{site_source.id}/documents/{other.id}/index-anyway")
    assert refused.status_code == 400 and "source" in refused.json()["error"]["fields"]


def test_only_a_skipped_page_can_be_indexed_anyway(api, site_source):
    done = Document.unscoped.get(source_id=site_source.id, url="http://docs.test/ok/0")
    response = api.post(f"/api/v1/sources/{site_source.id}/documents/{done.id}/index-anyway")
    assert response.status_code == 400 and "document" in response.json()["error"]["fields"]
    assert Document.unscoped.get(id=done.id).keep_short is False


def test_a_search_page_with_no_text_is_refused_with_why(api, site_source):
    page = skipped_page(site_source)
    Document.unscoped.filter(id=page.id).update(skip_reason="search_page", skipped_chars=0)
    response = api.post(f"/api/v1/sources/{site_source.id}/documents/{page.id}/index-anyway")
    assert response.status_code == 400, response.content
    assert "no text of its own" in response.json()["error"]["fields"]["document"][0]
    assert (skipped_page(site_source).status, skipped_page(site_source).keep_short) == ("skipped", False)
    # With text of its own (the search tips), it is indexed anyway like any skipped page.
    Document.unscoped.filter(id=page.id).update(skipped_chars=80)
    response = api.post(f"/api/v1/sources/{site_source.id}/documents/{page.id}/index-anyway")
    assert response.status_code == 202 and response.json()["keep_short"] is True


def test_a_page_of_another_source_is_not_found(api, agent, site_source):
    with workspace_scope(agent.workspace_id):
        other = Source.objects.create(agent=agent, kind="url", title="x", config={"url": "http://x.test/"})
    page = skipped_page(site_source)
    assert api.post(f"/api/v1/sources/{other.id}/documents/{page.id}/index-anyway").status_code == 404
    assert api.post(f"/api/v1/sources/{site_source.id}/documents/999999/index-anyway").status_code == 404


def test_keep_short_pages_is_set_at_creation_and_by_patch(
    api, agent, site_source, django_capture_on_commit_callbacks
):
    created = api.post(
        "/api/v1/sources",
        {"kind": "sitemap", "url": "http://127.0.0.1:9/", "agent": agent.id, "keep_short_pages": True},
        format="json",
    )
    assert created.status_code == 201 and created.json()["config"]["keep_short_pages"] is True
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.patch(f"/api/v1/sources/{site_source.id}", {"keep_short_pages": True}, format="json")
    assert response.status_code == 200 and response.json()["config"]["keep_short_pages"] is True
    # Turned on: its skipped pages are fetched again now (the source's decision, not each page's).
    assert len(callbacks) == 1
    pending = Document.unscoped.filter(source_id=site_source.id, status="pending")
    assert pending.count() == 3 and not pending.filter(keep_short=True).exists()
    text = api.post(
        "/api/v1/sources",
        {"kind": "text", "title": "t", "content": "x", "agent": agent.id, "keep_short_pages": True},
        format="json",
    )
    assert text.status_code == 400 and "keep_short_pages" in text.json()["error"]["fields"]
    text = api.post(
        "/api/v1/sources", {"kind": "text", "title": "t", "content": "x", "agent": agent.id}, format="json"
    ).json()
    refused = api.patch(f"/api/v1/sources/{text['id']}", {"keep_short_pages": True}, format="json")
    assert refused.status_code == 400 and "keep_short_pages" in refused.json()["error"]["fields"]


def test_a_member_cannot_index_a_page_anyway(client, member, site_source):
    client.force_login(member)
    page = skipped_page(site_source)
    assert (
        client.post(f"/api/v1/sources/{site_source.id}/documents/{page.id}/index-anyway").status_code == 403
    )
    assert skipped_page(site_source).status == "skipped"


def test_an_outsider_gets_404(outsider_api, site_source):
    page = skipped_page(site_source)
    base = f"/api/v1/sources/{site_source.id}"
    assert outsider_api.post(f"{base}/documents/{page.id}/index-anyway").status_code == 404
    assert outsider_api.get(f"{base}/documents", {"status": "skipped"}).status_code == 404
    assert outsider_api.patch(base, {"keep_short_pages": True}, format="json").status_code == 404
    page = skipped_page(site_source)
    assert (page.status, page.keep_short) == ("skipped", False)
    assert Source.unscoped.get(id=site_source.id).config["keep_short_pages"] is False
