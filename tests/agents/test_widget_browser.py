"""The widget in a real headless Chromium, on a customer page served from another origin."""

from __future__ import annotations

import pytest

from sources.tenancy import workspace_scope
from tests.factories import ROOT, index_text
from tests.ingestion.crawl.servers import Reply, serving

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENSHOTS = ROOT / "docs" / "screenshots"

HOST_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Acme Kettles</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font:16px system-ui;margin:0;background:#fafafa}}header{{background:#fff;padding:24px 40px;
border-bottom:1px solid #eee}}main{{padding:40px;max-width:720px}}</style></head>
<body><header><strong>Acme Kettles</strong></header><main><h1>The Acme 3000 kettle</h1>
<p>Boils a litre in three minutes. Ask our assistant anything about warranty, care and shipping.</p></main>
<script src="{server}/static/agents/widget.js" data-agent="{key}" defer></script></body></html>"""


@pytest.fixture
def host_site(live_server, workspace, agent):
    page = {"html": ""}
    with serving({"/": lambda handler: send_page(handler, page["html"])}) as site:
        origin = site.url("").rstrip("/")
        with workspace_scope(workspace.id):
            agent.allowed_origins = [origin]
            agent.save()
        page["html"] = HOST_PAGE.format(server=live_server.url, key=agent.public_key)
        yield site


def send_page(handler, html):
    from tests.ingestion.crawl.servers import send

    send(handler, Reply(200, html))


def test_ask_see_the_streamed_answer_and_open_the_sources(browser, host_site, workspace, agent):
    index_text(workspace, agent, "Warranty", "Every kettle carries a two-year warranty against defects.")
    index_text(workspace, agent, "Care guide", "Descale the kettle monthly with white vinegar.")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(host_site.url("/"))
    page.click(".gw-launch")
    page.fill(".gw-form input", "How long is the warranty on the kettle?")
    page.click(".gw-form button")
    answer = page.locator(".gw-bot").last
    answer.locator(".gw-src-btn").wait_for(timeout=20000)
    assert "two-year warranty" in answer.inner_text()
    page.screenshot(path=str(SCREENSHOTS / "widget-answer.png"))
    answer.locator(".gw-src-btn").click()
    page.wait_for_selector(".gw-side.gw-open li")
    assert page.locator(".gw-side li").all_inner_texts() == ["Warranty"]
    page.wait_for_timeout(300)  # the slide-in transition
    page.screenshot(path=str(SCREENSHOTS / "widget-sources.png"))

    # A reload keeps the thread (the conversation is stored server-side).
    page.reload()
    page.click(".gw-launch")
    page.wait_for_selector(".gw-user")
    assert page.locator(".gw-user").first.inner_text() == "How long is the warranty on the kettle?"
    page.close()


def test_the_widget_fits_a_phone(browser, host_site, workspace, agent):
    index_text(
        workspace, agent, "Shipping", "We ship to Canada, Mexico and the United States within two days."
    )
    page = browser.new_page(viewport={"width": 390, "height": 800}, is_mobile=True)
    page.goto(host_site.url("/"))
    page.click(".gw-launch")
    box = page.locator(".gw-panel").bounding_box()
    assert box["width"] == 390 and box["x"] == 0  # full screen on a phone
    page.fill(".gw-form input", "Where do you ship?")
    page.click(".gw-form button")
    page.locator(".gw-bot .gw-src-btn").wait_for(timeout=20000)
    page.screenshot(path=str(SCREENSHOTS / "widget-mobile.png"))
    page.close()


def test_a_page_on_an_unlisted_origin_gets_no_answer(browser, live_server, workspace, agent):
    with serving({"/": Reply(200, HOST_PAGE.format(server=live_server.url, key=agent.public_key))}) as other:
        page = browser.new_page()
        page.goto(other.url("/"))
        page.click(".gw-launch")
        page.fill(".gw-form input", "Hello?")
        page.click(".gw-form button")
        page.wait_for_selector(".gw-err", timeout=10000)  # the browser blocks the cross-origin response
        page.close()
