"""Browser fixtures for the admin UI: a signed-in page, a small website on 127.0.0.1, screenshots."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.factories import ROOT
from tests.ingestion.crawl.servers import LocalServer, Reply, serving

SCREENSHOTS = ROOT / "docs" / "screenshots"
PASSWORD = "pw-for-tests-123"

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head>
<body><header><nav>Acme Kettles · Shop · Help</nav></header>
<main><article><h1>{title}</h1>{body}</article></main>
<footer>© Acme Kettles</footer></body></html>"""
SHIPPING = (
    "<p>We ship every kettle to Canada, Mexico and the United States. Standard delivery takes three to "
    "five working days; express delivery takes two days and costs twelve dollars.</p>"
    "<p>Orders placed before noon leave our warehouse the same day. You get a tracking link by email "
    "as soon as the parcel is on its way, and you can change the delivery address until then.</p>"
)
HOME = (
    "<p>Welcome to the Acme Kettles help centre. Here you find answers about orders, delivery, returns "
    "and the care of your kettle, written by the people who build and ship them.</p>"
    "<p>Can't find what you need? Our support team answers email within one working day, Monday to "
    "Friday, and the chat on this page answers right away from these pages.</p>"
)
WARRANTY = (
    "<p>Every Acme kettle carries a two-year warranty against manufacturing defects, counted from the "
    "day of delivery. Keep your order number: it is all we need to start a claim.</p>"
    "<p>The warranty does not cover limescale damage. Descale the kettle monthly with white vinegar and "
    "rinse it twice before boiling water for drinking again.</p>"
)


@pytest.fixture
def site() -> Iterator[LocalServer]:
    """A two-page help site with a sitemap, and nothing at /gone (a 404)."""
    with serving() as server:
        urlset = "".join(f"<url><loc>{server.url(p)}</loc></url>" for p in ("/shipping", "/warranty"))
        server.routes.update(
            {
                "/shipping": Reply(200, PAGE.format(title="Shipping and delivery", body=SHIPPING)),
                "/warranty": Reply(200, PAGE.format(title="Warranty", body=WARRANTY)),
                "/sitemap.xml": Reply(
                    200,
                    '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                    f"{urlset}</urlset>",
                    content_type="application/xml",
                ),
                "/": Reply(200, PAGE.format(title="Acme Kettles help", body=HOME)),
            }
        )
        yield server


@pytest.fixture
def sign_in(browser, live_server):
    """sign_in(user) -> a page signed in through the sign-in form, at /app/."""
    pages = []

    def open_page(user, *, width: int = 1440, height: int = 900):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto(f"{live_server.url}/app/")
        assert "/login/" in page.url
        page.fill("input[name=login]", user.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/app/")
        pages.append(page)
        return page

    yield open_page
    for page in pages:
        page.context.close()


# The test servers' addresses (127.0.0.1:41234) mean nothing to a reader of the docs: the screenshots show
# the app as grounded.example.com and the local test sites as help.example.com. Only the drawn text and
# form values change, just before the picture is taken; links and the page's state stay as they were.
MASK_TEST_HOSTS = r"""() => {
  const app = location.host;
  const pattern = /(https?:\/\/)?(127\.0\.0\.1|localhost):(\d+)/g;
  const mask = (text) => text.replace(pattern, (all, scheme, host, port) =>
    (scheme ? "https://" : "") + (`${host}:${port}` === app ? "grounded.example.com" : "help.example.com"));
  const undo = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue;
    if (text.match(pattern)) { node.nodeValue = mask(text); undo.push(() => (node.nodeValue = text)); }
  }
  const typed = "textarea, input:is([type=text], [type=url], [type=search], :not([type]))";
  for (const field of document.querySelectorAll(typed)) {
    const value = field.value;
    if (value.match(pattern)) { field.value = mask(value); undo.push(() => (field.value = value)); }
  }
  window.__unmaskTestHosts = () => undo.forEach((step) => step());
  const values = [...document.querySelectorAll(typed)];
  return (document.body.innerText + " " + values.map((field) => field.value).join(" ")).match(pattern);
}"""


def screenshot(page, name: str, *, full_page: bool = True) -> None:
    """A whole page, or (full_page=False, for an open dialog) the screen as the person sees it."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # Sticky parts are drawn where the scroll left them; toasts are gone a few seconds later anyway.
    page.evaluate("window.scrollTo(0, 0); document.querySelector('.toasts')?.remove()")
    page.wait_for_timeout(200)  # let transitions settle
    left = page.evaluate(MASK_TEST_HOSTS)
    assert not left, f"a test address would show in ui-{name}.png: {left}"
    page.screenshot(path=str(SCREENSHOTS / f"ui-{name}.png"), full_page=full_page)
    page.evaluate("window.__unmaskTestHosts()")  # the test goes on with the page as it was
