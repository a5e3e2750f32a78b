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
        site.page, site.live_server_url = page, live_server.url
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
    answer.locator(".gw-sources li").first.wait_for(timeout=20000)
    assert "two-year warranty" in answer.inner_text()
    assert answer.locator(".gw-sources li").all_inner_texts() == ["Warranty"]
    # The finished answer is announced to screen readers (polite live region), not each streamed piece.
    page.wait_for_function(
        "document.querySelector('[data-grounded-widget]').shadowRoot.querySelector('.gw-live')"
        ".textContent.includes('two-year warranty')"
    )
    page.screenshot(path=str(SCREENSHOTS / "widget-answer.png"))

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
    page.locator(".gw-bot .gw-sources li").first.wait_for(timeout=20000)
    assert page.locator(".gw-form input").evaluate("i => getComputedStyle(i).fontSize") == "16px"
    page.screenshot(path=str(SCREENSHOTS / "widget-mobile.png"))
    page.close()


@pytest.mark.parametrize("viewport", [(390, 800), (320, 568)], ids=["phone", "small-phone"])
def test_the_close_and_send_buttons_are_44px_tap_targets_on_a_phone(browser, host_site, viewport):
    """44 by 44 CSS pixels is the usual minimum for a finger (WCAG 2.5.5, Apple's HIG); issue #56 measured
    the close button at 32 by 32 and the send button at 70 by 43."""
    width, height = viewport
    page = browser.new_page(viewport={"width": width, "height": height}, is_mobile=True, has_touch=True)
    page.goto(host_site.url("/"))
    page.click(".gw-launch")
    page.locator(".gw-panel.gw-open").wait_for()
    for selector in (".gw-close", ".gw-send", ".gw-form input"):
        box = page.locator(selector).bounding_box()
        assert box["width"] >= 44 and box["height"] >= 44, (selector, box)
    # The close button is still inside the panel's header, and tapping it closes the panel.
    head, close = page.locator(".gw-head").bounding_box(), page.locator(".gw-close").bounding_box()
    assert close["x"] + close["width"] <= head["x"] + head["width"] and close["y"] >= head["y"]
    page.tap(".gw-close")
    assert not page.locator(".gw-panel").is_visible()
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


AGGRESSIVE_HOST = """<!doctype html><html><head><meta charset="utf-8"><title>Hostile</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>* {{ all: unset }} head, script, style {{ display: none }}
button {{ display: none !important }} div {{ color: red !important; font-size: 40px !important }}
html {{ font-size: 8px }} svg {{ width: 300px }}</style></head>
<body><p>A host page that restyles everything.</p><div class="gw-panel" id="theirs">Their own gw-panel</div>
<button id="their-button">Hidden by them</button>
<script src="{server}/static/agents/widget.js" data-agent="{key}" defer></script></body></html>"""


def shadow(page, js):
    """Evaluate `js` with `root` bound to the widget's shadow root."""
    find = "document.querySelector('[data-grounded-widget]').shadowRoot"
    return page.evaluate(f"() => {{ const root = {find}; {js} }}")


def contrast(page, selector):
    return shadow(
        page,
        f"""const el = root.querySelector('{selector}'); const s = getComputedStyle(el);
        const lum = c => {{ const [r, g, b] = c.match(/\\d+/g).slice(0, 3).map(v => {{ v = v / 255;
            return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }});
            return 0.2126 * r + 0.7152 * g + 0.0722 * b; }};
        const [a, b] = [lum(s.color), lum(s.backgroundColor)].sort((x, y) => y - x);
        return (a + 0.05) / (b + 0.05);""",
    )


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_host_css_cannot_restyle_the_widget_and_ours_does_not_leak(
    browser, host_site, workspace, agent, phone
):
    index_text(workspace, agent, "Warranty", "Every kettle carries a two-year warranty against defects.")
    with workspace_scope(workspace.id):
        agent.widget_accent_color = "#0b7a3e"
        agent.widget_launcher_label = "Ask Acme"
        agent.save()
    host_site.page["html"] = AGGRESSIVE_HOST.format(server=host_site.live_server_url, key=agent.public_key)
    size = {"width": 390, "height": 760} if phone else {"width": 1280, "height": 800}
    page = browser.new_page(viewport=size, is_mobile=phone)
    page.goto(host_site.url("/"))
    launch = page.locator(".gw-launch")
    launch.get_by_text("Ask Acme").wait_for()
    assert launch.is_visible()  # their `button { display: none !important }` does not reach us
    assert launch.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(11, 122, 62)"
    # Ours does not reach them: their element named like ours keeps their style.
    theirs = page.locator("#theirs").evaluate(
        "d => [getComputedStyle(d).position, getComputedStyle(d).color]"
    )
    assert theirs == ["static", "rgb(255, 0, 0)"]
    assert not page.locator("#their-button").is_visible()
    launch.click()
    page.fill(".gw-form input", "How long is the warranty?")
    page.click(".gw-send")
    answer = page.locator(".gw-bot").last
    answer.locator(".gw-sources li").first.wait_for(timeout=20000)
    assert answer.evaluate("m => getComputedStyle(m).fontSize") == "15px"  # not their 40px
    box = page.locator(".gw-panel.gw-open").bounding_box()
    if phone:  # the whole screen (100dvh), the launcher out of the way
        assert (box["x"], box["y"], box["width"], box["height"]) == (0, 0, 390, 760)
        assert not page.locator(".gw-launch").is_visible()
    else:
        assert box["width"] == 380
    page.screenshot(path=str(SCREENSHOTS / f"widget-hostile-host{'-phone' if phone else ''}.png"))
    page.close()


def test_keyboard_focus_escape_labels_and_contrast(browser, host_site, workspace, agent):
    with workspace_scope(workspace.id):
        agent.widget_accent_color = "#ffd60a"  # a light accent: the widget must pick dark text on it
        agent.widget_position = "left"
        agent.widget_greeting = "Hi! Ask me about kettles."
        agent.save()
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(host_site.url("/"))
    page.locator(".gw-greeting").wait_for(state="attached")
    page.locator(".gw-launch").focus()
    page.keyboard.press("Enter")
    assert shadow(page, "return root.activeElement && root.activeElement.getAttribute('aria-label')") == (
        "Your question"
    )
    assert page.locator(".gw-launch").get_attribute("aria-expanded") == "true"
    assert page.locator(".gw-greeting").inner_text() == "Hi! Ask me about kettles."
    assert page.locator(".gw-panel").bounding_box()["x"] == 20  # the left side, from the agent's settings
    # Every button has an accessible name.
    assert (
        shadow(
            page,
            "return [...root.querySelectorAll('button')].filter(b => !(b.getAttribute('aria-label') || "
            "b.textContent.trim())).length",
        )
        == 0
    )
    for selector in (".gw-launch", ".gw-send", ".gw-head", ".gw-form input"):
        assert contrast(page, selector) >= 4.5, selector
    page.keyboard.press("Escape")
    assert not page.locator(".gw-panel").is_visible()
    assert shadow(page, "return root.activeElement && root.activeElement.className") == "gw-launch"
    assert page.locator(".gw-launch").get_attribute("aria-expanded") == "false"
    page.close()


def test_answers_are_safe_markdown_with_citation_links(browser, host_site, workspace, agent):
    from agents.models import Conversation, Message

    reply = (
        "The warranty **lasts two years** [1] and care is monthly [2].\n\n"
        "- Descale with `vinegar`\n- Rinse twice\n\n"
        "```\nkettle --descale\n```\n"
        '<img src=x onerror="window.pwned=1"> [click](javascript:window.pwned=2) [shop](https://acme.example/shop)'
    )
    with workspace_scope(workspace.id):
        conversation = Conversation.objects.create(workspace=workspace, agent=agent)
        Message.objects.create(
            workspace=workspace, conversation=conversation, role="user", content="Warranty?"
        )
        Message.objects.create(
            workspace=workspace,
            conversation=conversation,
            role="assistant",
            content=reply,
            sources=[
                {"number": 1, "title": "Warranty page", "url": "https://acme.example/warranty"},
                {"number": 2, "title": "Care guide", "url": None},
            ],
        )
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(host_site.url("/"))
    page.evaluate(f"sessionStorage.setItem('grounded:{agent.public_key}:conversation', '{conversation.id}')")
    page.reload()
    page.click(".gw-launch")
    answer = page.locator(".gw-bot").last
    answer.locator(".gw-sources").wait_for()
    assert answer.locator("strong").inner_text() == "lasts two years"
    assert answer.locator("ul li").all_inner_texts() == ["Descale with vinegar", "Rinse twice"]
    assert answer.locator("pre code").inner_text() == "kettle --descale"
    cite = answer.locator("a.gw-cite")
    assert cite.inner_text() == "[1]" and cite.get_attribute("href") == "https://acme.example/warranty"
    assert answer.locator("span.gw-cite").inner_text() == "[2]"  # no URL: not a link
    assert answer.locator("img").count() == 0
    assert "<img src=x" in answer.inner_text()  # shown as text, never parsed
    hrefs = answer.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert not [h for h in hrefs if h.startswith("javascript")]
    assert "https://acme.example/shop" in hrefs
    assert answer.locator(".gw-sources li").all_inner_texts() == ["Warranty page", "Care guide"]
    assert page.evaluate("window.pwned") is None
    page.screenshot(path=str(SCREENSHOTS / "widget-markdown.png"))
    page.close()


def test_a_models_streamed_markdown_is_rendered_and_its_html_is_not(
    browser, host_site, workspace, llm_agent, provider
):
    index_text(workspace, llm_agent, "Warranty", "Every kettle carries a two-year warranty against defects.")
    provider.chat = lambda body: {
        "content": "You get:\n\n1. **Two years** of cover [1]\n2. Free repairs\n\n"
        '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    }
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(host_site.url("/"))
    page.click(".gw-launch")
    page.fill(".gw-form input", "What warranty do I get?")
    page.click(".gw-send")
    answer = page.locator(".gw-bot").last
    answer.locator(".gw-sources li").first.wait_for(timeout=20000)
    assert answer.locator("ol li").first.inner_text().startswith("Two years")
    assert answer.locator("strong").first.inner_text() == "Two years"
    assert answer.locator("script, img").count() == 0
    assert "<script>window.pwned=1</script>" in answer.inner_text()
    assert page.evaluate("window.pwned") is None
    page.close()


def test_passages_are_shown_only_when_the_answer_carries_them_and_only_as_text(
    browser, host_site, workspace, agent
):
    """The chat API sends `knowledge.hits` only where a server-side decision allows it (the visitor token's
    claim); here the real answer's stream gets such an event added on its way to the widget, so the widget's
    own reading and rendering of it are what is tested."""
    import json

    index_text(workspace, agent, "Warranty", "Every kettle carries a two-year warranty against defects.")
    hits = {
        "type": "knowledge.hits",
        "call_id": "call_1",
        "query": "warranty",
        "hits": [
            {
                "title": "Warranty <b>terms</b>",
                "url": "https://acme.example/warranty",
                "score": 0.91,
                "text": 'Every kettle carries a two-year warranty.\n<img src=x onerror="window.pwned=1">',
            },
            {"title": "Old terms", "url": "javascript:window.pwned=2", "score": 0.5, "text": "**not bold**"},
        ],
    }
    inject = {"on": True}

    def add_hits(route):
        response = route.fetch()
        body = response.text()
        if inject["on"]:
            body = f"data: {json.dumps(hits)}\n\n" + body
        route.fulfill(response=response, body=body)

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.route("**/chat/stream", add_hits)
    page.goto(host_site.url("/"))
    page.click(".gw-launch")
    page.fill(".gw-form input", "How long is the warranty?")
    page.click(".gw-send")
    answer = page.locator(".gw-bot").last
    answer.locator(".gw-passages").wait_for(timeout=20000)
    assert answer.locator(".gw-sources li").first.inner_text() == "Warranty"  # the sources list stays
    section = answer.locator(".gw-passages")
    assert section.locator("summary").inner_text() == "PASSAGES (2)"  # styled upper-case
    section.locator("summary").click()
    items = section.locator("li")
    assert items.count() == 2
    first = items.nth(0)
    assert first.locator("a").inner_text() == "Warranty <b>terms</b>"  # the title as text, not markup
    assert first.locator("a").get_attribute("href") == "https://acme.example/warranty"
    assert first.locator("blockquote").inner_text().endswith('<img src=x onerror="window.pwned=1">')
    assert answer.locator("img, b").count() == 0
    second = items.nth(1)
    assert second.locator("a").count() == 0 and second.locator("strong").inner_text() == "Old terms"
    assert second.locator("blockquote").inner_text() == "**not bold**"  # not Markdown either
    assert page.evaluate("window.pwned") is None

    # An answer without hits (an anonymous visitor) has no Passages section.
    inject["on"] = False
    page.fill(".gw-form input", "And the warranty on the lid?")
    page.click(".gw-send")
    page.wait_for_function(
        "document.querySelector('[data-grounded-widget]').shadowRoot.querySelectorAll('.gw-bot[aria-busy]').length"
        " === 0 && document.querySelector('[data-grounded-widget]').shadowRoot.querySelectorAll('.gw-user')"
        ".length === 2"
    )
    page.locator(".gw-bot").last.locator(".gw-sources").wait_for(timeout=20000)
    assert page.locator(".gw-bot").last.locator(".gw-passages").count() == 0
    page.close()


def test_the_hosts_signed_in_staff_see_the_passages_and_visitors_do_not(browser, host_site, workspace, agent):
    from agents.visitor import sign

    index_text(workspace, agent, "Warranty", "Every kettle carries a two-year warranty against defects.")
    staff = sign(workspace.visitor_secret, user_id="staff-1", audiences=[], passages=True)
    anonymous_html = host_site.page["html"]

    def ask(html: str):
        host_site.page["html"] = html
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(host_site.url("/"))
        page.click(".gw-launch")
        page.fill(".gw-form input", "How long is the warranty on the kettle?")
        page.click(".gw-form button")
        answer = page.locator(".gw-bot").last
        answer.locator(".gw-sources li").first.wait_for(timeout=20000)
        return page, answer

    page, answer = ask(anonymous_html.replace("defer>", f'data-visitor-token="{staff}" defer>'))
    passages = answer.locator(".gw-passages")
    assert passages.locator("summary").text_content() == "Passages (1)"
    passages.locator("summary").click()
    assert "two-year warranty against defects" in passages.locator("li").first.inner_text()
    page.screenshot(path=str(SCREENSHOTS / "widget-passages.png"))
    page.close()

    page, answer = ask(anonymous_html)
    assert answer.locator(".gw-passages").count() == 0
    page.close()
