"""A PDF uploaded in Chromium, parsed and indexed by a real worker: its row says where the job has got to
(reading its pages, OCR, embedding n of m) through the page's live refresh, then that it is done."""

from __future__ import annotations

import time

import pytest

from tests.factories import SHARED_DATA
from tests.sources.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]
PARSE_STAGES = ("Reading page", "Reading tables", "Recognising text (OCR)")


def test_a_pdfs_row_shows_its_stage_while_it_is_parsed_and_embedded(
    celery_worker, sign_in, owner, agent, settings
):
    # The job shows a stage for ~3 s of its ~4: every 2 s the page may ask just before a stage and just
    # after it (the suite once saw no stage at all), so here it asks four times a second.
    settings.SOURCES_PAGE_POLL_MS = 250
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/sources")
    page.click(".page-head [data-open-dialog=add-dialog]")
    dialog = page.locator("#add-dialog")
    dialog.locator("[data-kind-tab=upload]").click()
    # 15 pages, one of them scanned: several seconds of parsing and embedding on this machine.
    dialog.locator("input[type=file]").set_input_files(
        str(SHARED_DATA / "documents" / "pdf" / "federal-register-2020-17221.pdf")
    )
    dialog.locator("[data-submit]").click()
    row = page.locator("#source-rows tr").first
    stages: list[str] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        status = row.locator("[data-field=status]").inner_text()
        # Read without waiting: the poll may re-render the row between a count and a read, and a stage that
        # has just ended is then waited for (15 s) rather than seen gone.
        shown = row.locator("[data-field=stage]").all_inner_texts()
        if shown and (text := shown[0]) and (not stages or stages[-1] != text):
            if not stages:
                screenshot(page, "upload-stage", full_page=False)
            stages.append(text)
        if status in ("Done", "Failed"):
            break
        time.sleep(0.2)
    assert status == "Done", row.inner_text()
    assert "15 sections indexed" in row.inner_text() and not row.locator("[data-field=stage]").count()
    assert stages, "the row never said where the job had got to"
    assert all(s.startswith((*PARSE_STAGES, "Embedding section")) for s in stages), stages
    # In order: no parse stage after embedding has begun.
    embedding = [i for i, s in enumerate(stages) if s.startswith("Embedding")]
    assert not embedding or all(not s.startswith(PARSE_STAGES) for s in stages[embedding[0] :]), stages
