"""The sources list's toolbar and bulk actions in Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sources.models import Source
from sources.tenancy import workspace_scope
from tests.sources.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_filter_by_a_menu_tick_every_row_and_delete_them(sign_in, owner, workspace, agent):
    with workspace_scope(workspace.id):
        for i in range(55):
            Source.objects.create(
                agent=agent, kind="text", title=f"Answer {i:02d}", status="done", chunks_count=2
            )
        for i in range(3):
            Source.objects.create(
                agent=agent,
                kind="url",
                title=f"Help page {i}",
                config={"url": f"https://help.acme.example/{i}"},
                status="failed",
                error="This page doesn't exist (the site answered 404). Check the address.",
            )
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/sources")
    expect(page.locator("[data-matched]")).to_have_text("1\u201350 of 58")
    expect(page.locator("#source-rows tr")).to_have_count(50)
    screenshot(page, "sources-list", full_page=False)

    page.select_option("select[name=kind]", "url")  # applies at once
    expect(page.locator("[data-matched]")).to_have_text("1\u20133 of 3")
    assert "kind=url" in page.url
    expect(page.locator("[data-bulk=delete]")).to_be_disabled()
    page.check("[data-pick-all]")
    expect(page.locator("[data-bulk-count]")).to_have_text("3 sources ticked")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("[data-bulk=delete]")
    expect(page.locator(".flash-msg.success")).to_have_text("Deleted 3 sources.")
    with workspace_scope(workspace.id):
        assert Source.objects.count() == 55 and not Source.objects.filter(kind="url").exists()

    page.fill("input[name=q]", "Answer 5")
    page.press("input[name=q]", "Enter")
    expect(page.locator("#source-rows tr")).to_have_count(5)  # Answer 50 to 54


COLUMN_EDGES = (
    "Array.from(document.querySelectorAll('#sources-table th')).map(th => th.getBoundingClientRect().x)"
)


def overlaps(a, b) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and (a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])
    )


def test_an_uploads_stage_shows_live_the_columns_stay_and_toasts_leave_the_buttons_free(
    sign_in, owner, workspace, agent
):
    from ingestion.jobs.progress import Progress

    with workspace_scope(workspace.id):
        for i in range(14):
            Source.objects.create(
                agent=agent, kind="text", title=f"Answer {i:02d}", status="done", chunks_count=2
            )
        scan = Source.objects.create(
            agent=agent,
            kind="upload",
            title="Annual report.pdf",
            status="indexing",
            config={"filename": "a.pdf"},
        )
        Progress(scan.id)("parsing", 3, 15)
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/sources")
    row = page.locator(f"tr[data-source-id='{scan.id}']")
    expect(row.locator("[data-field=stage]")).to_have_text("Reading page 3 of 15")
    columns = page.evaluate(COLUMN_EDGES)
    with workspace_scope(workspace.id):
        Progress(scan.id)("embedding", 2, 15)
    expect(row.locator("[data-field=stage]")).to_have_text("Embedding section 2 of 15")  # live, no reload
    with workspace_scope(workspace.id):
        Source.objects.filter(id=scan.id).update(
            status="done", pages_total=15, pages_done=14, pages_failed=1, chunks_count=123456
        )
    expect(row.locator("[data-field=status]")).to_have_text("Done")
    expect(row.locator("[data-field=stage]")).to_have_count(0)  # a finished source has no stage
    assert page.evaluate(COLUMN_EDGES) == columns  # nothing moved sideways when the row changed

    # A toast sits over no row's buttons, wherever the page is scrolled, and clicks pass through it.
    for scroll in (0, 300, 100_000):
        page.evaluate(f"window.scrollTo(0, {scroll})")
        # A row's Reindex that is on the screen (clicking one off it would scroll the page).
        index = page.evaluate(
            """() => Array.from(document.querySelectorAll('[data-action=reindex] button')).findIndex(b => {
                 const r = b.getBoundingClientRect();
                 return !b.disabled && r.top > 0 && r.bottom < innerHeight; })"""
        )
        page.locator("[data-action=reindex] button").nth(index).click()
        toast = page.locator(".toasts .flash-msg").last
        expect(toast).to_be_visible()
        box = page.locator(".toasts").bounding_box()
        buttons = page.evaluate(  # at one moment: the live refresh redraws rows meanwhile
            """() => Array.from(document.querySelectorAll('#source-rows .row-actions :is(a, button)'), b => {
                 const r = b.getBoundingClientRect();
                 return {x: r.x, y: r.y, width: r.width, height: r.height}; })"""
        )
        on_screen = [b for b in buttons if b["y"] + b["height"] > 0 and b["y"] < 900]
        assert on_screen
        for target in on_screen:
            assert not overlaps(box, target), (box, target)
        assert page.locator(".toasts").evaluate("t => getComputedStyle(t).pointerEvents") == "none"


def test_the_tabs_fit_a_phone_and_titles_keep_room_on_a_small_laptop(sign_in, owner, workspace, agent):
    with workspace_scope(workspace.id):
        Source.objects.create(agent=agent, kind="text", title="Returns policy", status="done", chunks_count=2)
    laptop = sign_in(owner, width=1024, height=768)
    laptop.goto(laptop.url + f"agents/{agent.id}/sources")
    widths = laptop.evaluate(
        "Array.from(document.querySelectorAll('#sources-table th'), (th) => th.offsetWidth)"
    )
    assert widths[1] >= 180, widths  # the source's column; the table scrolls sideways before it shrinks more

    page = sign_in(owner, width=375, height=800)
    page.goto(page.url + f"agents/{agent.id}/sources")
    tabs = page.locator(".tabs a")
    expect(tabs).to_have_count(4)
    for tab in tabs.all():
        box = tab.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 375, (tab.inner_text(), box)
    assert page.locator(".tabs").evaluate("t => t.scrollWidth <= t.clientWidth")
