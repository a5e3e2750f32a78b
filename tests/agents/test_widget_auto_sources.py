"""Auto sources: a page a widget visitor lands on is queued once (tracking parameters and fragments do
not make a new page) and crawled by the real worker into searchable documents."""

from __future__ import annotations

import pytest

from ingestion.kinds.auto import visited_page_url
from sources.models import Chunk, Document, Source
from sources.tenancy import workspace_scope
from tests.factories import wait_for
from tests.ingestion.crawl.servers import Reply, serving

PAGE = (
    "<html><head><title>Descaling guide</title></head><body><main><article><h1>Descaling guide</h1>"
    "<p>Descale the Acme 3000 kettle every month with one part white vinegar and two parts water. "
    "Boil, leave it for an hour, then rinse twice with fresh water before making tea again.</p>"
    + "".join(
        f"<p>Step {i}: check the heating plate and the filter for limescale, wipe them with a soft cloth, "
        f"and never use abrasive cleaners, which scratch the steel and void the two-year warranty.</p>"
        for i in range(1, 6)
    )
    + "</article></main></body></html>"
)


@pytest.mark.parametrize(
    ("visited", "kept"),
    [
        ("https://a.example/p?utm_source=x&utm_medium=y#top", "https://a.example/p"),
        ("https://a.example/p?id=7&gclid=abc&fbclid=def&UTM_Campaign=z", "https://a.example/p?id=7"),
        ("https://a.example/search?q=kettle&page=2&msclkid=1", "https://a.example/search?q=kettle&page=2"),
        ("https://a.example/p?_ga=1&mc_cid=2&pk_campaign=3&b=&a=1", "https://a.example/p?b=&a=1"),
    ],
)
def test_tracking_parameters_and_fragments_are_not_part_of_the_page(visited, kept):
    assert visited_page_url(visited) == kept


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_visited_page_is_queued_once_and_crawled_end_to_end(celery_worker, client, workspace, agent):
    with serving({"/guide": Reply(200, PAGE)}) as site:
        origin = site.url("").rstrip("/")
        with workspace_scope(workspace.id):
            agent.auto_sources = True
            agent.allowed_origins = [origin]
            agent.save()

        def init(page_url):
            return client.post(
                f"/api/v1/agents/{agent.public_key}/widget/init",
                {"page_url": page_url},
                content_type="application/json",
                HTTP_ORIGIN=origin,
            ).json()["page_queued"]

        assert init(site.url("/guide") + "?utm_source=newsletter&utm_campaign=spring") is True
        assert init(site.url("/guide") + "?fbclid=abc#steps") is False  # the same page
        assert init(site.url("/guide")) is False

        def crawled():
            source = Source.unscoped.filter(agent=agent, kind="auto").first()
            return source if source and source.status in ("done", "failed") else None

        source = wait_for(crawled, timeout=90)
    assert Source.unscoped.filter(agent=agent, kind="auto").count() == 1
    assert source.status == "done", source.error
    assert source.config["url"] == site.url("/guide")
    document = Document.unscoped.get(source=source)
    assert "white vinegar" in document.text
    with workspace_scope(workspace.id):
        assert Chunk.objects.filter(document=document).exists()
