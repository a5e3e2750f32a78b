"""The admin UI's skipped pages, through Django's test client: the row counts them apart from failures ("2
indexed · 3 skipped · 1 failed") and its skipped count opens their own list, which shows each with its reason
in words, the size of its text and an "Index anyway" button; the failed pages' list is failures only; the add
dialog and the settings page set "Keep short pages". An outsider gets 404 for all of it."""

from __future__ import annotations

import pytest

from sources.models import Document, Source
from sources.tenancy import workspace_scope
from tests.factories import make_skipped_site, skipped_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def site_source(workspace, agent):
    return make_skipped_site(
        workspace, agent, title="Docs site", config={"url": "http://docs.test/"}, short_chars=0, detail=False
    )


def test_the_row_counts_indexed_skipped_and_failed_pages(client, owner, agent, site_source):
    client.force_login(owner)
    page = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    pages = page[page.index('data-field="pages"') : page.index("</td>", page.index('data-field="pages"'))]
    assert "2 pages indexed" in pages
    assert f'href="/app/sources/{site_source.id}/skipped" data-skipped-link' in pages
    assert ">3 skipped</a>" in pages and ">1 failed</a>" in pages
    assert pages.index("indexed") < pages.index("skipped") < pages.index("failed")
    assert "2 too little text, 1 only a list of links" in pages  # by reason, in the link's title
    # The live refresh draws the same row.
    rows = client.get(f"/app/agents/{agent.id}/sources.json").json()["rows"]
    assert ">3 skipped</a>" in rows[0]["html"]


def test_the_skipped_list_shows_each_page_with_reason_size_and_index_anyway(
    client, owner, member, site_source
):
    client.force_login(owner)
    response = client.get(f"/app/sources/{site_source.id}/skipped")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Docs site: 3 skipped" in page and "2 too little text, 1 only a list of links" in page
    skipped = page[page.index('id="skipped-pages"') :]
    assert skipped.count('target="_blank">http://docs.test/short/') == 3
    assert ">too little text<" in skipped and ">only a list of links<" in skipped
    assert "42 characters" in skipped and "900 characters" in skipped
    assert skipped.count(">Index anyway</button>") == 3
    assert "http://docs.test/gone" not in page  # failures are not skipped pages
    assert f'href="/app/sources/{site_source.id}/failed" data-failed-link>1 failed</a>' in page
    client.force_login(member)
    page = client.get(f"/app/sources/{site_source.id}/skipped").content.decode()
    assert 'id="skipped-pages"' in page and "Index anyway</button>" not in page


def test_the_failed_list_is_failures_only_and_links_to_the_skipped_ones(client, owner, site_source):
    client.force_login(owner)
    page = client.get(f"/app/sources/{site_source.id}/failed").content.decode()
    assert "http://docs.test/gone" in page and "http://docs.test/short/" not in page
    assert f'href="/app/sources/{site_source.id}/skipped" data-skipped-link>see the skipped pages</a>' in page
    assert "3 other pages were skipped on purpose" in page


def test_a_search_page_with_no_text_cannot_be_indexed_anyway_and_says_why(client, owner, site_source):
    target = skipped_page(site_source)
    Document.unscoped.filter(id=target.id).update(skip_reason="search_page", skipped_chars=0)
    client.force_login(owner)
    page = client.get(f"/app/sources/{site_source.id}/skipped").content.decode()
    row = page[page.index(f'data-document-id="{target.id}"') :]
    row = row[: row.index("</tr>")]
    assert ">a search page<" in row and ">no text<" in row
    assert "disabled" in row and "no text of its own" in row
    response = client.post(f"/app/sources/{site_source.id}/skipped", {"document": target.id}, follow=True)
    assert response.status_code == 200 and "no text of its own" in response.content.decode()
    assert skipped_page(site_source).status == "skipped"


def test_index_anyway_from_the_list(client, owner, member, site_source, django_capture_on_commit_callbacks):
    target = skipped_page(site_source)
    client.force_login(member)
    assert client.post(f"/app/sources/{site_source.id}/skipped", {"document": target.id}).status_code == 403
    client.force_login(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(f"/app/sources/{site_source.id}/skipped", {"document": target.id})
    assert response.status_code == 302 and response.url == f"/app/sources/{site_source.id}/skipped"
    assert len(callbacks) == 1
    target = skipped_page(site_source)
    assert (target.status, target.keep_short) == ("pending", True)
    assert skipped_page(site_source, 1).status == "skipped"
    # A page that is not skipped is refused with a message, not an error page.
    done = Document.unscoped.get(source_id=site_source.id, url="http://docs.test/ok/0")
    Source.unscoped.filter(id=site_source.id).update(status="done")
    response = client.post(f"/app/sources/{site_source.id}/skipped", {"document": done.id}, follow=True)
    assert "Only a skipped page can be indexed anyway" in response.content.decode()
    assert Document.unscoped.get(id=done.id).status == "done"
    for bad in ("", "abc", "99999999"):
        response = client.post(f"/app/sources/{site_source.id}/skipped", {"document": bad}, follow=True)
        assert response.status_code == 200 and "No such page in this source" in response.content.decode()
    # The failed list takes no posts: index anyway lives with the skipped pages.
    assert client.post(f"/app/sources/{site_source.id}/failed", {"document": target.id}).status_code == 405


def test_keep_short_pages_in_the_add_dialog_and_the_settings(client, owner, agent, site_source, settings):
    settings.CRAWL_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    client.force_login(owner)
    dialog = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert 'name="keep_short_pages"' in dialog
    response = client.post(
        f"/app/agents/{agent.id}/sources/add",
        {"kind": "sitemap", "url": "http://127.0.0.1:9/", "keep_short_pages": "on"},
    )
    assert response.status_code == 302
    assert Source.unscoped.get(agent_id=agent.id, config__url="http://127.0.0.1:9/").config[
        "keep_short_pages"
    ]
    settings_page = client.get(f"/app/sources/{site_source.id}/settings").content.decode()
    assert 'name="keep_short_pages"' in settings_page and "3 now" in settings_page
    assert f'href="/app/sources/{site_source.id}/skipped">see which</a>' in settings_page
    response = client.post(
        f"/app/sources/{site_source.id}/settings", {"title": "Docs site", "keep_short_pages": "on"}
    )
    assert response.status_code == 302
    assert Source.unscoped.get(id=site_source.id).config["keep_short_pages"] is True
    assert Document.unscoped.filter(source_id=site_source.id, status="pending").count() == 3
    with workspace_scope(agent.workspace_id):
        text = Source.objects.create(agent=agent, kind="text", title="Returns", status="done")
    assert 'name="keep_short_pages"' not in client.get(f"/app/sources/{text.id}/settings").content.decode()


def test_an_outsider_gets_404(client, outsider, site_source):
    client.force_login(outsider)
    target = skipped_page(site_source)
    assert client.get(f"/app/sources/{site_source.id}/skipped").status_code == 404
    assert client.post(f"/app/sources/{site_source.id}/skipped", {"document": target.id}).status_code == 404
    assert client.get(f"/app/sources/{site_source.id}/failed").status_code == 404
    assert skipped_page(site_source).status == "skipped"
