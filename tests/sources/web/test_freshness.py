"""The admin UI's freshness pages, through Django's test client: a source's sync line, its failed pages with a
retry button, its settings (schedule, pause), the add dialog's schedule and the "Failed" filter."""

from __future__ import annotations

import pytest
from django.utils import timezone

from sources.models import Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


@pytest.fixture
def broken_site(workspace, agent):
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent,
            kind="sitemap",
            title="Docs site",
            config={"url": "http://docs.test/"},
            status="done",
            schedule="daily",
            pages_total=4,
            pages_done=1,
            pages_failed=3,
            last_synced_at=timezone.now() - timezone.timedelta(hours=3),
            next_sync_at=timezone.now() + timezone.timedelta(hours=21),
            last_sync={
                "added": 0,
                "changed": 1,
                "unchanged": 0,
                "removed": 1,
                "failed": 3,
                "removed_pages": [{"url": "http://docs.test/old", "reason": "the page answered 404"}],
            },
        )
        for i, (code, error) in enumerate(
            [("timeout", "The site took too long to answer."), ("not_found", "This page doesn't exist.")] * 2
        ):
            Document.objects.create(
                source=source,
                url=f"http://docs.test/page-{i}",
                status="failed" if i < 3 else "done",
                failure_class=code if i < 3 else "",
                error=error if i < 3 else "",
                attempts=2,
            )
        text = Source.objects.create(agent=agent, kind="text", title="Returns", status="done")
    return source, text


def test_the_row_says_how_the_source_syncs_and_links_its_failed_pages(client, owner, agent, broken_site):
    client.force_login(owner)
    source, _ = broken_site
    page = client.get(f"/app/agents/{agent.id}/sources").content.decode().replace("\xa0", " ")
    assert "Sync: every day" in page and ">3 hours ago</span>" in page and ">in 20 hours</span>" in page
    assert "Last sync: 0 added, 1 changed, 0 unchanged, 1 removed, 3 failed" in page
    assert "http://docs.test/old" in page  # what the last sync removed, and why
    assert f'href="/app/sources/{source.id}/failed" data-failed-link>3 failed</a>' in page
    failed = client.get(f"/app/sources/{source.id}/failed").content.decode()
    assert failed.count('target="_blank">http://docs.test/page-') == 3
    assert "The site took too long to answer." in failed and ">timeout<" in failed
    assert "Retry failed pages" in failed


def test_retry_failed_pages_from_the_list(
    client, owner, member, broken_site, django_capture_on_commit_callbacks
):
    source, _ = broken_site
    client.force_login(member)
    assert client.post(f"/app/sources/{source.id}/retry-failed").status_code == 403
    assert "Retry failed pages" not in client.get(f"/app/sources/{source.id}/failed").content.decode()
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(f"/app/sources/{source.id}/retry-failed")
    assert response.status_code == 302
    assert Document.unscoped.filter(source_id=source.id, status="pending").count() == 3


def test_the_failed_card_filters_the_list_to_failed_sources(client, owner, agent, workspace, broken_site):
    source, text = broken_site
    Source.unscoped.filter(id=source.id).update(status="failed")
    client.force_login(owner)
    everything = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert f'data-source-id="{text.id}"' in everything and 'href="?status=failed"' in everything
    failed = client.get(f"/app/agents/{agent.id}/sources", {"status": "failed"}).content.decode()
    assert f'data-source-id="{source.id}"' in failed and f'data-source-id="{text.id}"' not in failed
    rows = client.get(f"/app/agents/{agent.id}/sources.json", {"status": "failed"}).json()["rows"]
    assert [r["id"] for r in rows] == [source.id]


def test_settings_change_the_schedule_and_pause(client, owner, member, broken_site):
    source, text = broken_site
    client.force_login(member)
    assert client.post(f"/app/sources/{source.id}/settings", {"title": "x"}).status_code == 403
    client.force_login(owner)
    page = client.get(f"/app/sources/{source.id}/settings").content.decode()
    assert 'name="schedule"' in page and 'value="weekly"' in page
    response = client.post(
        f"/app/sources/{source.id}/settings",
        {"title": "Handbook", "schedule": "weekly", "paused": "on", "hidden_while_paused": "on"},
    )
    assert response.status_code == 302
    saved = Source.unscoped.get(id=source.id)
    assert (saved.title, saved.schedule, saved.paused, saved.hidden_while_paused) == (
        "Handbook",
        "weekly",
        True,
        True,
    )
    assert saved.next_sync_at is None
    assert 'name="schedule"' not in client.get(f"/app/sources/{text.id}/settings").content.decode()
    assert client.post(f"/app/sources/{source.id}/settings", {"title": ""}).status_code == 400


def test_the_add_dialog_offers_a_schedule_for_kinds_that_sync(client, owner, agent, settings):
    settings.CRAWL_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    client.force_login(owner)
    page = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert 'name="schedule"' in page
    assert 'value="sitemap" data-fields="url max_pages keep_short_pages" data-resyncable' in page
    assert 'value="text" data-fields="content"' in page
    assert 'value="text" data-fields="content" data-resyncable' not in page  # pasted text: no schedule
    response = client.post(
        f"/app/agents/{agent.id}/sources/add",
        {"kind": "sitemap", "url": "http://127.0.0.1:9/", "schedule": "hourly"},
    )
    assert response.status_code == 302
    assert Source.unscoped.get(agent_id=agent.id, kind="sitemap").schedule == "hourly"


def test_an_outsider_gets_404(client, outsider, broken_site):
    source, _ = broken_site
    client.force_login(outsider)
    assert client.get(f"/app/sources/{source.id}/failed").status_code == 404
    assert client.get(f"/app/sources/{source.id}/settings").status_code == 404
    assert client.post(f"/app/sources/{source.id}/retry-failed").status_code == 404
