"""Per-source chunking in Chromium: the settings page previews the passages typed settings make, before
saving; the add dialog previews pasted text."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import index_text, wait_for
from tests.sources.web.conftest import screenshot

# Saving indexes the source again on the session's real worker; each test waits for it to finish, so no
# job of this test is still writing when the database is emptied after it.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker"),
]


def settled(workspace_id: int, **lookup) -> Source:
    def done():
        with workspace_scope(workspace_id):
            source = Source.objects.filter(**lookup).first()
        return source if source is not None and source.status in ("done", "failed") else None

    return wait_for(done, timeout=120)


FAQ = "\n---\n".join(
    f"Q: How do I do thing {i}?\nA: " + f"You do thing {i} by following these steps carefully. " * 3
    for i in range(8)
)


def test_preview_then_save_the_chunking_of_a_source(sign_in, owner, workspace, agent):
    source = index_text(workspace, agent, "Help FAQ", FAQ)
    page = sign_in(owner)
    page.goto(page.url + f"sources/{source.id}/settings")
    page.fill("input[name=record_separator]", "---")
    page.fill("input[name=chunk_size]", "400")
    page.click("[data-chunk-preview]")
    summary = page.locator("[data-chunk-summary]")
    expect(summary).to_contain_text("passages from 1 of 1 document")
    chunks = page.locator("[data-chunk-preview-out] [data-chunk] pre")
    assert chunks.count() > 1
    for text in chunks.all_text_contents():
        assert text.startswith("Q: How do I do thing") and len(text) <= 400  # whole records only
    with workspace_scope(workspace.id):
        assert "record_separator" not in Source.objects.get(id=source.id).config  # a preview saves nothing
    screenshot(page, "source-chunking-preview")

    page.fill("input[name=chunk_overlap]", "300")  # more than a quarter of 400
    page.click("[data-chunk-preview]")
    expect(page.locator("[data-error-for=chunk_overlap]")).to_contain_text("quarter")
    page.fill("input[name=chunk_overlap]", "")

    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url(f"**/agents/{agent.id}/sources")
    with workspace_scope(workspace.id):
        saved = Source.objects.get(id=source.id)
    assert saved.config["record_separator"] == "---" and saved.config["chunk_size"] == 400
    reindexed = settled(workspace.id, id=source.id)
    assert reindexed.status == "done"
    with workspace_scope(workspace.id):
        texts = list(Chunk.objects.filter(source_id=source.id).values_list("text", flat=True))
    assert len(texts) > 1 and all(t.startswith("Q: How do I do thing") for t in texts)  # the new chunking


def test_the_add_dialog_previews_pasted_text(sign_in, owner, agent):
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/sources?add=text")
    dialog = page.locator("#add-dialog")
    page.fill("#add-content", FAQ)
    dialog.locator("summary", has_text="Passages").click()
    page.fill("#add-record-separator", "---")
    dialog.locator("[data-chunk-preview]").click()
    expect(dialog.locator("[data-chunk-summary]")).to_contain_text("1 passage from")  # 2,000 fit all 8
    page.fill("#add-chunk-size", "200")  # one record each
    dialog.locator("[data-chunk-preview]").click()
    expect(dialog.locator("[data-chunk-summary]")).to_contain_text("8 passages")
    screenshot(page, "add-dialog-chunking-preview", full_page=False)
    page.fill("#add-title-input", "Help FAQ")
    dialog.locator("[data-submit]").click()
    expect(dialog).to_be_hidden()
    with workspace_scope(agent.workspace_id):
        added = Source.objects.get(title="Help FAQ")
    assert added.config["chunk_size"] == 200 and added.config["record_separator"] == "---"
    assert settled(agent.workspace_id, id=added.id).status == "done"
