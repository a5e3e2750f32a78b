"""Page jobs on real Celery workers: a whole site from its sitemap, every failure class, and linked files
parsed like uploads."""

from __future__ import annotations

import threading

import pytest

from ingestion.crawl.extract import DroppedPage
from sources.models import Document, Source
from tests.factories import wait_for
from tests.ingestion.conftest import flask_page_paths
from tests.ingestion.crawl.servers import (
    Reply,
    gzip_bomb,
    redirect,
    reset_connection,
    serving,
    slow_headers,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ARTICLE = (
    "<html><head><title>{title}</title></head><body><nav>Home | Products | About</nav><main><article>"
    "<h1>{title}</h1>"
    + "".join(
        f"<p>Paragraph {i}: our kettle model {i} boils water quickly, keeps it warm for {i + 10} minutes, "
        f"and is covered by a warranty on every part for {i + 1} years.</p>"
        for i in range(5)
    )
    + "</article></main><footer>© Example</footer></body></html>"
)


def add_source(api, agent, kind, url, **extra):
    response = api.post(
        "/api/v1/sources", {"kind": kind, "url": url, "agent": agent.id, **extra}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def finished(api, source_id):
    body = api.get(f"/api/v1/sources/{source_id}").json()
    return body if body["status"] in ("done", "failed") else None


def documents(source_id):
    return {d.url.rsplit("/", 1)[-1] or "/": d for d in Document.unscoped.filter(source_id=source_id)}


def test_a_sitemap_source_crawls_every_page_of_the_site_once(celery_worker, api, agent, flask_site):
    source_id = add_source(api, agent, "sitemap", flask_site.url("/"))
    # One worker process embeds the whole site with its sentence vectors (~6,600 inputs): 220-300 s on
    # 2 shared cores, so the limit only catches a crawl that never finishes.
    body = wait_for(lambda: finished(api, source_id), timeout=600)
    pages = flask_page_paths()
    crawled = Document.unscoped.filter(source_id=source_id)
    assert body["status"] == "done", body
    assert crawled.count() == len(pages) == body["pages_total"]
    assert len({d.url for d in crawled}) == len(pages)
    assert body["pages_done"] + body["pages_skipped"] + body["pages_failed"] == len(pages)
    assert body["pages_left"] == 0
    failed = {d.url.rsplit("/", 1)[-1]: d for d in crawled if d.status == "failed"}
    skipped = {d.url.rsplit("/", 1)[-1]: d for d in crawled if d.status == "skipped"}
    # Only the pages that should be dropped are (checked by eye in the site; the extractor decides whether a
    # near-empty one is kept), each for its reason: a soft 404 fails, Sphinx's search page (results of a
    # query, from markup) is skipped, and every page is skipped exactly when its reason is a skip.
    assert {"404.html", "search.html"} <= set(failed) | set(skipped), (failed, skipped)
    assert set(failed) | set(skipped) <= {"404.html", "search.html", "py-modindex.html", "jquery.html"}, {
        name: d.error for name, d in {**failed, **skipped}.items()
    }
    assert "doesn't exist" in failed["404.html"].error  # a soft 404
    assert (
        skipped["search.html"].skip_reason == "search_page" and "search page" in skipped["search.html"].error
    )
    assert all(d.skip_reason in DroppedPage.SKIP_REASONS for d in skipped.values())
    for d in failed.values():
        assert d.failure_class == "dropped" and d.error_detail.split()[1] not in DroppedPage.SKIP_REASONS, d
    for path in pages:
        wanted = "/" if path == "index.html" else f"/{path}"
        # Every page is fetched once: none is sent to the browser strategy (Sphinx's search page asks for
        # JavaScript in a noscript notice, but only to search; short pages never go there).
        assert flask_site.paths_requested().count(wanted) == 1, wanted
    quickstart = crawled.get(url=flask_site.url("/quickstart.html"))
    assert "Quickstart" in quickstart.title
    assert "A Minimal Application" in quickstart.text
    assert "Navigation" not in quickstart.text[:200]  # main content, not the sidebar
    hits = api.get("/api/v1/search", {"q": "minimal Flask application hello world", "top_k": 3}).json()[
        "results"
    ]
    assert any("quickstart" in (h["source"]["url"] or "") or "Flask" in h["text"] for h in hits)


def test_a_feed_source_crawls_its_items(celery_worker, api, agent):
    items = "".join(f"<item><title>Post {i}</title><link>/posts/{i}.html</link></item>" for i in range(3))
    channel = f"<channel><title>Blog</title>{items}</channel>"
    feed = f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0">{channel}</rss>'
    routes = {"/feed.xml": Reply(200, feed, content_type="application/rss+xml")}
    routes.update({f"/posts/{i}.html": Reply(200, ARTICLE.format(title=f"Post {i}")) for i in range(3)})
    with serving(routes) as site:
        source_id = add_source(api, agent, "feed", site.url("/feed.xml"))
        body = wait_for(lambda: finished(api, source_id), timeout=60)
    assert body["status"] == "done" and body["pages_done"] == 3, (body["error"], body["notice"])
    assert sorted(documents(source_id)) == ["0.html", "1.html", "2.html"]


class Flaky:
    """Fails the first `failures` requests with `reply`, then serves the article."""

    def __init__(self, failures, reply):
        self.failures, self.reply, self.lock = failures, reply, threading.Lock()

    def __call__(self, handler):
        from tests.ingestion.crawl.servers import send

        with self.lock:
            self.failures -= 1
            failing = self.failures >= 0
        send(handler, self.reply if failing else Reply(200, ARTICLE.format(title="Recovered")))


FAULTS = {
    # path: (route, expected status, words in the error or None)
    "/rate-limited-retry-after": (
        Flaky(2, Reply(429, "slow down", headers={"Retry-After": "1"})),
        "done",
        None,
    ),
    "/rate-limited-plain": (Flaky(1, Reply(429, "slow down")), "done", None),
    "/rate-limited-forever": (
        Reply(429, "slow down", headers={"Retry-After": "0"}),
        "failed",
        "rate-limiting",
    ),
    "/flaky-500": (Flaky(2, Reply(500, "oops")), "done", None),
    "/always-503": (Reply(503, "down"), "failed", None),
    "/gone-404": (Reply(404, "<title>Not found</title>"), "failed", None),
    "/gone-410": (Reply(410, "gone"), "failed", None),
    "/slow": (slow_headers(6), "failed", None),
    "/reset": (reset_connection, "failed", None),
    "/huge": (
        Reply(200, "<html><body>" + "x" * (3 * 1024 * 1024) + "</body></html>"),
        "failed",
        "larger than",
    ),
    "/bomb": (gzip_bomb(64), "failed", None),
    "/to-private": (redirect("http://10.0.0.1/admin"), "failed", "private"),
    "/to-metadata": (redirect("http://169.254.169.254/latest/meta-data/"), "failed", None),
}


@pytest.fixture
def fault_site(settings):
    with serving({path: route for path, (route, _, _) in FAULTS.items()}) as site:
        yield site


def test_every_failure_class_ends_as_specified(celery_worker, api, agent, fault_site):
    sources = {path: add_source(api, agent, "url", fault_site.url(path)) for path in FAULTS}
    results = {
        path: wait_for(lambda sid=sid: finished(api, sid), timeout=120) for path, sid in sources.items()
    }
    for path, (_route, expected, words) in FAULTS.items():
        body = results[path]
        assert body["status"] == expected, (path, body)
        if expected == "failed":
            assert body["error"], path  # a readable reason for people...
            source = Source.unscoped.get(id=sources[path])
            assert source.error_detail, path  # ...and the raw one for operators
            if words:
                assert words in body["error"].lower(), (path, body["error"])
    hits = fault_site.paths_requested()
    # Permanent failures fail at once; transient ones use their three attempts; 429s don't spend any.
    assert hits.count("/gone-404") == 1 and hits.count("/gone-410") == 1
    assert hits.count("/always-503") == 4  # the first try and three retries
    assert hits.count("/rate-limited-retry-after") == 3
    assert hits.count("/rate-limited-forever") == 3  # the first try and two requeues (the test cap)
    assert "/admin" not in hits


def test_without_the_setting_private_addresses_are_refused_at_creation(api, agent, settings):
    settings.CRAWL_ALLOWED_NETWORKS = []
    for url in [
        "http://127.0.0.1:8000/",
        "http://localhost/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://[::1]/",
        "http://169.254.169.254/",
        "http://2130706433/",
    ]:
        response = api.post("/api/v1/sources", {"kind": "url", "url": url, "agent": agent.id}, format="json")
        assert response.status_code == 400, url
        assert "url" in response.json()["error"]["fields"], url
    for url in ["ftp://example.com/file", "javascript:alert(1)", "not a url"]:
        response = api.post("/api/v1/sources", {"kind": "url", "url": url, "agent": agent.id}, format="json")
        assert response.status_code == 400 and "url" in response.json()["error"]["fields"], url
    assert Source.unscoped.count() == 0


def chunk_rows(source_id):
    from sources.models import Chunk

    return sorted(Chunk.unscoped.filter(source_id=source_id).values_list("id", "created_at"))


def test_a_recrawl_does_not_re_embed_unchanged_pages(celery_worker, api, agent):
    page = Reply(200, ARTICLE.format(title="Stable"), headers={"ETag": '"v1"'})
    with serving({"/stable": page}) as site:
        source_id = add_source(api, agent, "url", site.url("/stable"))
        wait_for(lambda: finished(api, source_id))
        chunk_ids = chunk_rows(source_id)
        assert api.post(f"/api/v1/sources/{source_id}/recrawl").status_code == 202
        body = wait_for(lambda: finished(api, source_id))
        assert body["status"] == "done"
        second = site.requests[-1]
        assert second.headers.get("If-None-Match") == '"v1"'  # a conditional request
        assert chunk_rows(source_id) == chunk_ids  # not re-embedded: the same rows, created at the same time


def test_discover_lists_found_pages_with_titles(api, flask_site):
    response = api.post("/api/v1/discover", {"domain": flask_site.url("/")}, format="json")
    assert response.status_code == 200
    pages = response.json()["pages"]
    assert any(p["url"].endswith("/quickstart.html") for p in pages)
    assert all(p["title"] is None or isinstance(p["title"], str) for p in pages)


def test_discover_refuses_private_addresses_by_default(api, settings):
    settings.CRAWL_ALLOWED_NETWORKS = []
    response = api.post("/api/v1/discover", {"domain": "http://127.0.0.1:9/"}, format="json")
    assert response.status_code == 400 and "domain" in response.json()["error"]["fields"]


def test_outsider_cannot_recrawl_our_source(api, outsider_api, agent):
    source_id = api.post(
        "/api/v1/sources", {"kind": "text", "title": "t", "content": "x", "agent": agent.id}, format="json"
    ).json()["id"]
    assert outsider_api.post(f"/api/v1/sources/{source_id}/recrawl").status_code == 404


def test_a_pdf_and_a_word_file_linked_from_a_sitemap_are_parsed_like_uploads(celery_worker, api, agent):
    from tests.factories import SHARED_DATA
    from tests.ingestion.parsers.builders import docx_bytes

    pdf = (SHARED_DATA / "documents" / "pdf" / "scotus-transcript-p1.pdf").read_bytes()
    word = docx_bytes(["Kettle care guide.", "Descale the kettle every 4 weeks with a citric acid solution."])
    docx_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    with serving({}) as site:
        urls = [site.url("/guide.html"), site.url("/files/transcript.pdf"), site.url("/files/care")]
        entries = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
        site.routes.update(
            {
                "/sitemap.xml": Reply(
                    200,
                    f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>',
                    content_type="application/xml",
                ),
                "/guide.html": Reply(200, ARTICLE.format(title="Guide")),
                "/files/transcript.pdf": Reply(200, pdf, content_type="application/pdf"),
                # No extension in the address: the content type names the file type.
                "/files/care": Reply(200, word, content_type=docx_type),
            }
        )
        source_id = add_source(api, agent, "sitemap", site.url("/sitemap.xml"))
        body = wait_for(lambda: finished(api, source_id), timeout=120)
    pages = documents(source_id)
    assert body["status"] == "done" and body["pages_done"] == 3, {k: d.error for k, d in pages.items()}
    assert (
        "SUPREME COURT" in pages["transcript.pdf"].text
        and "MICHAEL A. KNOWLES" in pages["transcript.pdf"].text
    )
    assert pages["transcript.pdf"].title == "transcript.pdf"
    assert "every 4 weeks" in pages["care"].text
    hits = api.get("/api/v1/search", {"q": "how often to descale the kettle", "top_k": 3}).json()["results"]
    assert hits[0]["source"]["url"] == site.url("/files/care")


def test_a_linked_file_that_cannot_be_read_fails_with_the_parsers_reason(celery_worker, api, agent):
    with serving(
        {"/broken.pdf": Reply(200, b"%PDF-1.7 this is not really a PDF", content_type="application/pdf")}
    ) as site:
        source_id = add_source(api, agent, "url", site.url("/broken.pdf"))
        body = wait_for(lambda: finished(api, source_id), timeout=60)
    assert body["status"] == "failed"
    assert "web page" not in body["error"] and body["error"], body
