"""Ingestion test fixtures: servers on 127.0.0.1, the Flask docs as a site, a guard on outgoing sockets."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest

from ingestion.crawl.fetch import FetchPolicy
from ingestion.crawl.robots import clear_robots_cache
from tests.ingestion.crawl.servers import FLASK_DOCS, LocalServer, Reply, guard_connections, serving


@pytest.fixture(autouse=True)
def connection_attempts(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every socket connect made during the test; anything but loopback fails the test at once."""
    return guard_connections(monkeypatch)


@pytest.fixture(autouse=True)
def _fresh_robots_cache() -> Iterator[None]:
    clear_robots_cache()
    yield
    clear_robots_cache()


@pytest.fixture(autouse=True)
def _fresh_host_slots() -> None:
    """Every test site is on 127.0.0.1, one host to the per-host limits: a Crawl-delay or lease left by an
    earlier test's site must not make this test's pages wait."""
    from ingestion.crawl import hosts

    hosts.forget("http://127.0.0.1/")


@pytest.fixture
def local_policy() -> FetchPolicy:
    """Test servers live on 127.0.0.1 and only there; every other private address stays blocked."""
    return FetchPolicy(allowed_networks=("127.0.0.1/32",), total_timeout_s=10)


def flask_page_paths() -> list[str]:
    return sorted(path.relative_to(FLASK_DOCS).as_posix() for path in FLASK_DOCS.rglob("*.html"))


def flask_url(server: LocalServer, page_path: str) -> str:
    return server.url("/" if page_path == "index.html" else f"/{page_path}")


def _urlset(urls: list[str]) -> str:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return (
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )


@pytest.fixture(scope="module")
def flask_site() -> Iterator[LocalServer]:
    """The Flask docs with robots.txt -> sitemap index -> a gzipped child and a plain child that overlap, and
    an index that lists itself (a cycle)."""
    with serving(root=FLASK_DOCS) as server:
        pages = flask_page_paths()
        half = len(pages) // 2
        first = _urlset([flask_url(server, p) for p in pages[: half + 5]])
        second = _urlset([flask_url(server, p) for p in pages[half:]])
        children = [
            server.url("/sitemaps/pages-1.xml.gz"),
            server.url("/sitemaps/pages-2.xml"),
            server.url("/sitemap_index.xml"),
        ]
        index = (
            '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<sitemap><loc>{child}</loc></sitemap>" for child in children)
            + "</sitemapindex>"
        )
        robots = f"User-agent: *\nDisallow: /_sources/\n\nSitemap: {server.url('/sitemap_index.xml')}\n"
        server.routes.update(
            {
                "/robots.txt": Reply(200, robots, content_type="text/plain"),
                "/sitemap_index.xml": Reply(200, index, content_type="application/xml"),
                "/sitemaps/pages-1.xml.gz": Reply(
                    200, gzip.compress(first.encode()), content_type="application/gzip"
                ),
                "/sitemaps/pages-2.xml": Reply(200, second, content_type="application/xml"),
            }
        )
        yield server
