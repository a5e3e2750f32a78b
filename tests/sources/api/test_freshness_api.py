"""The API of freshness: a source's schedule, pause and sync outcome; its failed pages, listed and retried;
the workspace's default schedule. An outsider gets 404 for all of it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from sources.models import Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


@pytest.fixture
def site_source(workspace, agent):
    """A crawled site: 3 failed pages (each for its reason) and 2 indexed ones."""
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent,
            kind="sitemap",
            title="Docs",
            config={"url": "http://docs.test/"},
            status="done",
            schedule="daily",
            last_synced_at=timezone.now(),
            next_sync_at=timezone.now() + timezone.timedelta(days=1),
            last_sync={"added": 2, "changed": 0, "unchanged": 0, "removed": 0, "failed": 3},
        )
        failures = [
            ("timeout", "The site took too long to answer."),
            ("not_found", "This page doesn't exist."),
        ]
        failures.append(("server_error", "The site had a temporary problem (HTTP 503)."))
        for i, (code, error) in enumerate(failures):
            Document.objects.create(
                source=source,
                url=f"http://docs.test/bad/{i}",
                status="failed",
                failure_class=code,
                error=error,
                attempts=i + 1,
            )
        for i in range(2):
            Document.objects.create(source=source, url=f"http://docs.test/ok/{i}", status="done", text="fine")
    return source


def test_a_source_shows_its_schedule_and_last_sync(api, site_source):
    body = api.get(f"/api/v1/sources/{site_source.id}").json()
    assert body["schedule"] == "daily" and body["resyncable"] is True and body["paused"] is False
    assert body["last_synced_at"] and body["next_sync_at"]
    assert body["last_sync"]["failed"] == 3 and body["last_sync"]["added"] == 2


def test_patch_changes_title_schedule_and_pause(api, site_source):
    url = f"/api/v1/sources/{site_source.id}"
    response = api.patch(url, {"title": "Handbook", "schedule": "weekly"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Handbook" and response.json()["schedule"] == "weekly"
    response = api.patch(url, {"paused": True, "hidden_while_paused": True}, format="json")
    body = response.json()
    assert body["paused"] is True and body["hidden_while_paused"] is True and body["next_sync_at"] is None
    assert api.patch(url, {"schedule": "monthly"}, format="json").status_code == 400
    assert api.patch(url, {"title": "  "}, format="json").status_code == 400
    source = Source.unscoped.get(id=site_source.id)
    assert (source.title, source.schedule, source.paused) == ("Handbook", "weekly", True)


def test_text_sources_have_no_schedule_to_set(api, agent):
    created = api.post(
        "/api/v1/sources",
        {"kind": "text", "title": "t", "content": "hello", "agent": agent.id},
        format="json",
    ).json()
    assert created["schedule"] == "off" and created["resyncable"] is False
    response = api.patch(f"/api/v1/sources/{created['id']}", {"schedule": "daily"}, format="json")
    assert response.status_code == 400 and "schedule" in response.json()["error"]["fields"]
    refused = api.post(
        "/api/v1/sources",
        {"kind": "text", "title": "t", "content": "x", "agent": agent.id, "schedule": "hourly"},
        format="json",
    )
    assert refused.status_code == 400 and "schedule" in refused.json()["error"]["fields"]


def test_failed_pages_are_listed_with_their_reasons_and_pages(api, site_source):
    response = api.get(f"/api/v1/sources/{site_source.id}/documents", {"status": "failed", "page_size": 2})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]
    first = body["results"][0]
    assert first["url"] == "http://docs.test/bad/0"
    assert first["failure_class"] == "timeout" and first["failure_label"] == "timeout"
    assert first["error"] == "The site took too long to answer." and first["attempts"] == 1
    rest = api.get(body["next"]).json()["results"]
    assert [d["failure_class"] for d in rest] == ["server_error"]
    everything = api.get(f"/api/v1/sources/{site_source.id}/documents").json()
    assert everything["count"] == 5
    assert api.get(f"/api/v1/sources/{site_source.id}/documents", {"status": "broken"}).status_code == 400


def test_retry_failed_requeues_only_the_failed_pages(api, site_source, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post(f"/api/v1/sources/{site_source.id}/retry-failed")
    assert response.status_code == 202 and response.json()["retried"] == 3
    assert len(callbacks) == 1  # the page jobs are published once the transaction commits
    statuses = dict(Document.unscoped.filter(source_id=site_source.id).values_list("url", "status"))
    assert sorted(url for url, status in statuses.items() if status == "pending") == [
        f"http://docs.test/bad/{i}" for i in range(3)
    ]
    assert all(statuses[f"http://docs.test/ok/{i}"] == "done" for i in range(2))
    # Busy now: a second retry is refused rather than queued twice.
    assert api.post(f"/api/v1/sources/{site_source.id}/retry-failed").status_code == 400


def test_the_workspace_default_schedule(api, workspace, agent):
    assert api.get("/api/v1/workspace").json()["default_schedule"] == "daily"
    assert api.patch("/api/v1/workspace", {"default_schedule": "weekly"}, format="json").status_code == 200
    assert api.patch("/api/v1/workspace", {"default_schedule": "yearly"}, format="json").status_code == 400
    created = api.post(
        "/api/v1/sources", {"kind": "url", "url": "http://127.0.0.1:9/", "agent": agent.id}, format="json"
    ).json()
    assert created["schedule"] == "weekly"


def test_an_outsider_sees_none_of_it(outsider_api, site_source):
    base = f"/api/v1/sources/{site_source.id}"
    assert outsider_api.get(f"{base}/documents", {"status": "failed"}).status_code == 404
    assert outsider_api.patch(base, {"paused": True}, format="json").status_code == 404
    assert outsider_api.post(f"{base}/retry-failed").status_code == 404
    assert Source.unscoped.get(id=site_source.id).paused is False
