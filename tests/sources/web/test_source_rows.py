"""What a source's row offers and says: the kind's own unit, Reindex only where it can help, explained
actions, relative times that keep moving, and long passages cut visibly with a way to read them whole."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from sources.models import Source
from sources.tenancy import workspace_scope
from tests.factories import index_text


def row_html(client, agent, title):
    page = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    start = page.index(f'data-field="title">{title}<')
    return page[page.rindex("<tr ", 0, start) : page.index("</tr>", start)]


@pytest.mark.django_db
def test_rows_use_the_kinds_unit_and_offer_reindex_only_where_it_helps(client, owner, workspace, agent):
    with workspace_scope(workspace.id):
        Source.objects.create(
            agent=agent, kind="text", title="Hours", status="done", pages_total=1, pages_done=1
        )
        Source.objects.create(
            agent=agent, kind="feed", title="Blog", status="done", pages_total=3, pages_done=3
        )
        Source.objects.create(
            agent=agent,
            kind="upload",
            title="Broken.pdf",
            status="failed",
            pages_total=1,
            state={"reupload_needed": True},
        )
        Source.objects.create(
            agent=agent,
            kind="upload",
            title="Scan.pdf",
            status="failed",
            error="The file is truncated or corrupt. Download or export it again and upload the new copy.",
            state={"new_file_needed": True},
        )
        Source.objects.create(
            agent=agent,
            kind="sitemap",
            title="Old site",
            status="failed",
            error="Every page failed: 2 not found.",
            pages_total=2,
            pages_failed=2,
            config={"url": "https://old.acme.example/sitemap.xml"},
        )
        Source.objects.create(
            agent=agent,
            kind="url",
            title="Pricing",
            status="done",
            pages_total=1,
            pages_done=1,
            config={"url": "https://acme.example/pricing"},
        )
    client.force_login(owner)
    assert "1 text indexed" in row_html(client, agent, "Hours")
    assert "3 items indexed" in row_html(client, agent, "Blog")
    pricing = row_html(client, agent, "Pricing")
    assert "1 page indexed" in pricing
    assert ">Reindex</button>" in pricing and "Nothing is fetched" in pricing
    assert ">Recrawl</button>" in pricing and "Fetch the pages again now" in pricing
    broken = row_html(client, agent, "Broken.pdf")
    assert "Re-upload needed" in broken and ">Reindex</button>" not in broken
    # A file that could not be read: reading it again won't help, a new version will.
    scan = row_html(client, agent, "Scan.pdf")
    assert ">Reindex</button>" not in scan and ">Upload a new version</button>" in scan
    assert "truncated or corrupt" in scan and "Re-upload needed" not in scan
    # A site that fetched nothing: no text to reindex; Recrawl stays, beside the reason and the failed pages.
    old_site = row_html(client, agent, "Old site")
    assert ">Reindex</button>" not in old_site and ">Recrawl</button>" in old_site
    assert "Every page failed: 2 not found." in old_site and ">2 failed</a>" in old_site
    assert "Fetch the pages again now" in old_site
    # Bulk reindex skips both, and says so.
    with workspace_scope(workspace.id):
        ids = list(
            Source.objects.filter(title__in=["Scan.pdf", "Old site", "Hours"]).values_list("id", flat=True)
        )
    response = client.post(
        f"/app/agents/{agent.id}/sources/bulk",
        {"action": "reindex", "ids": ids},
        HTTP_ACCEPT="application/json",
    )
    assert response.json()["done"] == 1 and response.json()["skipped"] == 2


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_cut_passages_show_an_ellipsis_and_open_whole_and_times_keep_moving(sign_in, owner, workspace, agent):
    long_text = " ".join(f"Sentence {i} about descaling the kettle with white vinegar." for i in range(80))
    source = index_text(workspace, agent, "Care guide", long_text)
    page = sign_in(owner)
    base = page.url
    page.clock.install(time=timezone.now())
    page.goto(base + f"agents/{agent.id}/sources")
    when = page.locator(f"tr[data-source-id='{source.id}'] [data-ago]")
    expect(when).to_have_text("just now")
    page.clock.fast_forward(dt.timedelta(minutes=3).total_seconds() * 1000)
    expect(when).to_have_text("3 minutes ago")

    page.goto(base + f"agents/{agent.id}/test?q=descaling+vinegar")
    passage = page.locator("[data-hit] [data-clamp]").first
    expect(passage).to_have_class("text cut")
    height = passage.bounding_box()["height"]
    page.get_by_role("button", name="Show the whole passage").first.click()
    expect(passage).to_have_class("text cut open")
    assert passage.bounding_box()["height"] > height * 1.5
