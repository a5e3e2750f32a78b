"""Sitemaps: real samples parsed (never fetched from: their URLs are on the public internet), and real
fetching from servers on 127.0.0.1."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from ingestion.crawl.fetch import FetchPolicy, PermanentFetchError, TransientFetchError
from ingestion.crawl.sitemap import (
    SitemapNotFoundError,
    SitemapParseError,
    fetch_sitemap,
    parse_sitemap,
)
from ingestion.crawl.urls import normalize_url
from tests.ingestion.conftest import flask_page_paths, flask_url
from tests.ingestion.crawl.servers import SITEMAP_SAMPLES, LocalServer, Reply, serving

# file -> (page URLs, child sitemaps) it holds, or the error it must give.
SAMPLES: dict[str, tuple[int, int] | type[Exception]] = {
    "trafilatura/sitemaps-org-sitemap.xml": (84, 0),
    "trafilatura/sitemaps-org-sitemap.xml.gz": (84, 0),
    "trafilatura/sitemap-hreflang.xml": (3, 0),
    "trafilatura/sitemapindex-cdata.xml": (0, 2),
    "advertools/news_sitemap.xml": (6, 0),
    "advertools/video_sitemap.xml": (6, 0),
    "advertools/image_sitemap.xml": (2, 0),
    "advertools/regular_sitemap.xml": (5, 0),
    "advertools/regular_sitemap.xml.gz": (5, 0),
    "advertools/zipped_sitemap.xml.gz": (5, 0),
    "advertools/sitemap_index.xml": (0, 4),
    "advertools/error_sitemap.xml": SitemapParseError,
    "advertools/robots.txt": SitemapParseError,
}


def test_every_sample_is_listed() -> None:
    on_disk = {p.relative_to(SITEMAP_SAMPLES).as_posix() for p in SITEMAP_SAMPLES.rglob("*") if p.is_file()}
    assert on_disk - {"MANIFEST.md", "MANIFEST.tsv"} == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_sample_gives_its_urls_or_a_clear_error(name: str) -> None:
    body = (SITEMAP_SAMPLES / name).read_bytes()
    expected = SAMPLES[name]
    if isinstance(expected, tuple):
        pages, children = parse_sitemap(body, "https://sample.test/sitemap.xml")
        assert (len(pages), len(children)) == expected
        assert all(url.startswith(("http://", "https://")) and "#" not in url for url in pages + children)
    else:
        with pytest.raises(expected) as caught:
            parse_sitemap(body, "https://sample.test/sitemap.xml")
        assert caught.value.message.startswith("This")


def test_gzipped_and_plain_samples_agree() -> None:
    plain = parse_sitemap(
        (SITEMAP_SAMPLES / "trafilatura/sitemaps-org-sitemap.xml").read_bytes(), "https://x.test/"
    )
    zipped = parse_sitemap(
        (SITEMAP_SAMPLES / "trafilatura/sitemaps-org-sitemap.xml.gz").read_bytes(), "https://x.test/"
    )
    assert plain == zipped
    assert plain[0][0] == "https://www.sitemaps.org/"


def test_cdata_and_whitespace_inside_loc_are_read() -> None:
    _, children = parse_sitemap(
        (SITEMAP_SAMPLES / "trafilatura/sitemapindex-cdata.xml").read_bytes(), "https://x.test/"
    )
    assert children == ["http://www.example.com/sitemap1.xml.gz", "http://www.example.com/sitemap2.xml.gz"]
    pages, _ = parse_sitemap(
        (SITEMAP_SAMPLES / "advertools/news_sitemap.xml").read_bytes(), "https://x.test/"
    )
    assert all(url == url.strip() for url in pages)


def test_image_and_video_locs_are_not_pages() -> None:
    pages, _ = parse_sitemap(
        (SITEMAP_SAMPLES / "advertools/image_sitemap.xml").read_bytes(), "https://x.test/"
    )
    assert pages == ["http://example.com/sample.html", "http://example.com/sample_2.html"]


def test_urls_are_normalized_and_deduplicated() -> None:
    body = b"""<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <url><loc>HTTP://Example.COM:80/a#top</loc></url>
      <url><loc>http://example.com/a</loc></url>
      <url><loc>https://example.com:443</loc></url>
      <url><loc>/relative/page?x=1&amp;y=2</loc></url>
      <url><loc>mailto:someone@example.com</loc></url>
    </urlset>"""
    pages, _ = parse_sitemap(body, "https://example.com/sitemap.xml")
    assert pages == [
        "http://example.com/a",
        "https://example.com/",
        "https://example.com/relative/page?x=1&y=2",
    ]


def test_truncated_xml_is_recovered_best_effort() -> None:
    body = (
        b'<?xml version="1.0"?><urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc>'
    )
    assert parse_sitemap(body, "http://a.test/sitemap.xml") == (["http://a.test/1", "http://a.test/2"], [])


def test_entity_expansion_is_refused_quickly() -> None:
    lol = b'<!ENTITY lol "lol">' + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [' + lol + b"]><urlset><url><loc>&lol9;</loc></url></urlset>"
    )
    started = time.monotonic()
    with pytest.raises(SitemapParseError):
        parse_sitemap(bomb, "http://a.test/sitemap.xml")
    assert time.monotonic() - started < 1


def test_plain_text_sitemaps_are_read() -> None:
    body = b"https://a.test/one\nhttps://a.test/two\n\nhttps://a.test/one\n"
    assert parse_sitemap(body, "https://a.test/sitemap.txt") == (
        ["https://a.test/one", "https://a.test/two"],
        [],
    )


def test_normalize_url_rules() -> None:
    assert normalize_url("HTTPS://WWW.Example.com:443/Path?q=1#frag") == "https://www.example.com/Path?q=1"
    assert normalize_url("http://example.com:8080") == "http://example.com:8080/"
    assert (
        normalize_url("page.html", "https://example.com/docs/index.html")
        == "https://example.com/docs/page.html"
    )
    assert normalize_url("ftp://example.com/") is None
    assert normalize_url("http://[::1]:80/x") == "http://[::1]/x"


# Fetching -------------------------------------------------------------------------------------------------


def test_site_root_finds_every_flask_page_once_through_robots_index_and_gzipped_child(
    flask_site: LocalServer, local_policy: FetchPolicy
) -> None:
    before = len(flask_site.requests)
    result = fetch_sitemap(flask_site.url("/"), local_policy)
    expected = sorted(flask_url(flask_site, p) for p in flask_page_paths())
    assert len(expected) == 77
    assert sorted(result.urls) == expected
    assert len(result.urls) == len(set(result.urls))
    assert (result.truncated, result.errors) == (False, [])
    paths = [r.path for r in flask_site.requests[before:]]
    assert paths == ["/robots.txt", "/sitemap_index.xml", "/sitemaps/pages-1.xml.gz", "/sitemaps/pages-2.xml"]


def test_sitemap_index_children_are_fetched_once_even_in_a_cycle(
    flask_site: LocalServer, local_policy: FetchPolicy
) -> None:
    before = len(flask_site.requests)
    result = fetch_sitemap(flask_site.url("/sitemap_index.xml"), local_policy)
    paths = [r.path for r in flask_site.requests[before:]]
    assert paths == ["/sitemap_index.xml", "/sitemaps/pages-1.xml.gz", "/sitemaps/pages-2.xml"]
    assert len(result.urls) == 77


def test_a_direct_sitemap_url_is_fetched_verbatim(flask_site: LocalServer, local_policy: FetchPolicy) -> None:
    before = len(flask_site.requests)
    result = fetch_sitemap(flask_site.url("/sitemaps/pages-2.xml"), local_policy)
    assert [r.path for r in flask_site.requests[before:]] == ["/sitemaps/pages-2.xml"]
    assert 30 < len(result.urls) < 77


def test_max_pages_caps_the_result_and_says_so(flask_site: LocalServer, local_policy: FetchPolicy) -> None:
    capped = fetch_sitemap(flask_site.url("/"), local_policy, max_pages=10)
    assert len(capped.urls) == 10
    assert capped.truncated is True
    exact = fetch_sitemap(flask_site.url("/"), local_policy, max_pages=77)
    assert (len(exact.urls), exact.truncated) == (77, False)


def _sample_route(name: str, **headers: str) -> Reply:
    return Reply(200, (SITEMAP_SAMPLES / name).read_bytes(), content_type="application/xml", headers=headers)


def test_served_gzip_variants_are_all_read(local_policy: FetchPolicy) -> None:
    real_gzip = (SITEMAP_SAMPLES / "advertools/zipped_sitemap.xml.gz").read_bytes()
    routes = {
        "/misnamed.xml.gz": _sample_route("advertools/regular_sitemap.xml.gz"),  # says .gz, is plain
        "/zipped-as-plain.xml": Reply(200, real_gzip, content_type="application/xml"),  # is gzip, says plain
        "/double.xml.gz": Reply(  # a gzip file sent with gzip transfer encoding on top
            200,
            gzip.compress(real_gzip),
            content_type="application/x-gzip",
            headers={"Content-Encoding": "gzip"},
        ),
    }
    with serving(routes) as server:
        for path in routes:
            result = fetch_sitemap(server.url(path), local_policy)
            assert len(result.urls) == 5, path


def test_probes_find_a_sitemap_when_robots_lists_none(local_policy: FetchPolicy) -> None:
    routes = {"/sitemap_index.xml": _sample_route("advertools/regular_sitemap.xml")}
    with serving(routes) as server:
        result = fetch_sitemap(server.url("/"), local_policy)
        assert len(result.urls) == 5
        assert server.paths_requested() == ["/robots.txt", "/sitemap.xml", "/sitemap_index.xml"]
        assert result.errors == []  # a guessed address that doesn't exist is not a problem to report


def test_no_sitemap_anywhere_is_a_clear_permanent_error(local_policy: FetchPolicy) -> None:
    with serving({}) as server, pytest.raises(SitemapNotFoundError) as caught:
        fetch_sitemap(server.url("/"), local_policy)
    assert "couldn't find a sitemap" in caught.value.message


def test_a_failing_child_is_reported_and_the_rest_kept(local_policy: FetchPolicy) -> None:
    with serving({}) as server:
        index = (
            "<sitemapindex>"
            f"<sitemap><loc>{server.url('/broken.xml')}</loc></sitemap>"
            f"<sitemap><loc>{server.url('/good.xml')}</loc></sitemap>"
            f"<sitemap><loc>{server.url('/garbage.xml')}</loc></sitemap>"
            "</sitemapindex>"
        )
        server.routes.update(
            {
                "/index.xml": Reply(200, index, content_type="application/xml"),
                "/broken.xml": Reply(500, "oops"),
                "/good.xml": _sample_route("advertools/regular_sitemap.xml"),
                "/garbage.xml": _sample_route("advertools/error_sitemap.xml"),
            }
        )
        result = fetch_sitemap(server.url("/index.xml"), local_policy)
    assert len(result.urls) == 5
    assert len(result.errors) == 2
    assert any("broken.xml" in error and "temporary problem" in error for error in result.errors)


@pytest.mark.parametrize(("status", "expected"), [(404, PermanentFetchError), (503, TransientFetchError)])
def test_the_given_sitemap_failing_raises_its_fetch_error(
    status: int, expected: type[Exception], local_policy: FetchPolicy
) -> None:
    with serving({"/sitemap.xml": Reply(status, "no")}) as server, pytest.raises(expected):
        fetch_sitemap(server.url("/sitemap.xml"), local_policy)


def test_a_sitemap_on_a_private_address_is_refused() -> None:
    with pytest.raises(PermanentFetchError, match="private network"):
        fetch_sitemap("http://192.168.1.10/sitemap.xml", FetchPolicy())


def test_sample_paths_come_from_shared_data() -> None:
    assert Path(__file__).resolve().parents[3].parent / "shared" / "data" / "sitemaps" == SITEMAP_SAMPLES
