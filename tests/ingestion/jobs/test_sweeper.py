"""Nothing stays in flight forever; widget visits can queue their page as an `auto` source."""

import pytest
from django.utils import timezone

from ingestion.jobs.sweeper import sweep_stalled
from sources.models import Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def test_the_sweeper_fails_stalled_pages_with_a_reason_and_settles_the_source(workspace, agent, settings):
    settings.CRAWL_STALLED_AFTER = 60
    settings.CRAWL_MAX_ATTEMPTS = 1
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent,
            kind="url",
            title="t",
            config={"url": "http://x.test/"},
            status="crawling",
            pages_total=2,
        )
        stuck = Document.objects.create(source=source, url="http://x.test/a", status="crawling", attempts=1)
        fresh = Document.objects.create(source=source, url="http://x.test/b", status="done", text="ok")
    old = timezone.now() - timezone.timedelta(minutes=10)
    Document.unscoped.filter(id=stuck.id).update(updated_at=old)
    Source.unscoped.filter(id=source.id).update(updated_at=old)
    assert sweep_stalled()["documents_failed"] == 1
    stuck.refresh_from_db()
    assert stuck.status == "failed" and stuck.error == "The crawl of this page was interrupted."
    assert Document.unscoped.get(id=fresh.id).status == "done"
    source.refresh_from_db()
    assert source.status == "done" and source.pages_failed == 1 and source.pages_done == 1


def test_the_sweeper_leaves_recent_work_alone(workspace, agent):
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="url", title="t", config={"url": "http://x.test/"}, status="crawling"
        )
        Document.objects.create(source=source, url="http://x.test/a", status="crawling")
    assert sweep_stalled()["documents_failed"] == 0


def test_widget_init_queues_an_auto_source_once_per_page(
    client, workspace, agent, settings, django_capture_on_commit_callbacks
):
    settings.AUTO_SOURCES_PER_HOUR = 2
    with workspace_scope(workspace.id):
        agent.auto_sources = True
        agent.allowed_origins = ["http://127.0.0.1:8123"]
        agent.save()

    def init(page_url):
        return client.post(
            f"/api/v1/agents/{agent.public_key}/widget/init",
            {"page_url": page_url},
            content_type="application/json",
            HTTP_ORIGIN="http://127.0.0.1:8123",
        ).json()

    with django_capture_on_commit_callbacks():
        assert init("http://127.0.0.1:8123/pricing")["page_queued"] is True
        assert init("http://127.0.0.1:8123/pricing#plans")["page_queued"] is False  # the same page
        assert init("https://elsewhere.example/page")["page_queued"] is False  # not an allowed origin
        assert init("http://127.0.0.1:8123/about")["page_queued"] is True
        assert init("http://127.0.0.1:8123/faq")["page_queued"] is False  # over the hourly budget
    with workspace_scope(workspace.id):
        assert sorted(Source.objects.filter(kind="auto").values_list("config__url", flat=True)) == [
            "http://127.0.0.1:8123/about",
            "http://127.0.0.1:8123/pricing",
        ]


def test_widget_init_queues_nothing_when_auto_sources_are_off(client, workspace, agent):
    response = client.post(
        f"/api/v1/agents/{agent.public_key}/widget/init",
        {"page_url": "https://acme.example/x"},
        content_type="application/json",
        HTTP_ORIGIN="https://acme.example",
    )
    assert response.json()["page_queued"] is False
    assert Source.unscoped.count() == 0
