"""Feeds: every real sample parsed (their links point to the public internet and are never fetched), and feeds
served from 127.0.0.1 for fetching, encodings and relative links."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingestion.crawl.feed import FeedParseError, NotAFeedError, fetch_feed, parse_feed
from ingestion.crawl.fetch import FetchPolicy
from tests.ingestion.crawl.servers import FEED_SAMPLES, LocalServer, Reply

FEED_URL = "http://feeds.test/dir/feed.xml"

# Items with a web address per sample (several have entries with only tag:/urn: ids, which are not pages).
ITEM_COUNTS = {
    "feedparser-py/compression/deflate-no-headers.z": 0,
    "feedparser-py/compression/deflate-not-compressed.z": 0,
    "feedparser-py/compression/gzip-not-compressed.gz": 0,
    "feedparser-py/large-atom-touchnokia-ru.xml": 15,
    "node-feedparser/atom-with-tag-uri-links.xml": 0,
    "node-feedparser/complexNamespaceFeed.xml": 0,
    "node-feedparser/compressed.xml": 10,
    "node-feedparser/iconv.xml": 10,
    "node-feedparser/illegally-nested.xml": 10,
    "node-feedparser/invalid-characters-gzipped.xml": 25,
    "node-feedparser/mediacontent-dupes.xml": 1,
    "node-feedparser/nondefaultnamespace-baseline.atom": 1,
    "node-feedparser/nondefaultnamespace-xhtml.atom": 1,
    "node-feedparser/relative-channel-image-url.xml": 1,
    "node-feedparser/rss-with-relative-html-urls-no-base.xml": 1,
    "node-feedparser/rss-with-relative-html-urls.xml": 1,
    "node-feedparser/rss-with-relative-urls.xml": 2,
    "node-feedparser/rss-with-trailing-meta.xml": 1,
    "node-feedparser/saxerror.xml": 3,
    "node-feedparser/tpm-with-empty-base.atom": 20,
    "node-feedparser/tpm.atom": 20,
    "node-feedparser/unknown-namespace.atom": 1,
    "rss-parser/atom-customfields.atom": 15,
    "rss-parser/content-encoded.rss": 7,
    "rss-parser/customfields.rss": 15,
    "rss-parser/encoding.rss": 40,
    "rss-parser/giantbomb-podcast.rss": 730,
    "rss-parser/guardian.rss": 55,
    "rss-parser/heise.atom": 15,
    "rss-parser/heraldsun.rss": 2,
    "rss-parser/instant-article.rss": 1,
    "rss-parser/item-itunes-episodeType.rss": 1,
    "rss-parser/itunes-href.rss": 10,
    "rss-parser/itunes-keywords-array.rss": 1,
    "rss-parser/itunes-keywords.rss": 1,
    "rss-parser/itunes-missing-image.rss": 9,
    "rss-parser/missing-fields.atom": 0,
    "rss-parser/narro.rss": 1,
    "rss-parser/reddit-atom.rss": 24,
    "rss-parser/reddit-home.rss": 24,
    "rss-parser/rss-1.rss": 69,
    "trafilatura/feed1.atom": 1,
    "trafilatura/feed2.rss": 1,
}
ERRORS = {
    "node-feedparser/notafeed.html": NotAFeedError,
    "rss-parser/unrecognized.rss": NotAFeedError,  # an HTML "Document Moved" page
    "feedparser-py/compression/gzip-struct-error.gz": FeedParseError,  # gzip with a bad checksum
}


def test_every_sample_is_listed() -> None:
    on_disk = {p.relative_to(FEED_SAMPLES).as_posix() for p in FEED_SAMPLES.rglob("*") if p.is_file()}
    assert on_disk - {"MANIFEST.tsv"} == set(ITEM_COUNTS) | set(ERRORS)


@pytest.mark.parametrize("name", sorted(ITEM_COUNTS))
def test_each_sample_gives_its_item_links(name: str) -> None:
    feed = parse_feed((FEED_SAMPLES / name).read_bytes(), FEED_URL)
    assert len(feed.items) == ITEM_COUNTS[name]
    assert len({item.url for item in feed.items}) == len(feed.items)
    assert all(item.url.startswith(("http://", "https://")) and "#" not in item.url for item in feed.items)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_each_unreadable_sample_gives_a_clear_error(name: str) -> None:
    with pytest.raises(ERRORS[name]) as caught:
        parse_feed((FEED_SAMPLES / name).read_bytes(), FEED_URL)
    assert caught.value.message.startswith("This")


def test_an_html_page_is_named_as_a_web_page() -> None:
    with pytest.raises(NotAFeedError) as caught:
        parse_feed((FEED_SAMPLES / "node-feedparser/notafeed.html").read_bytes(), FEED_URL)
    assert caught.value.message == "This address is a web page, not a feed."


def test_an_html_page_that_links_its_feed_says_where_it_is() -> None:
    page = b"""<!doctype html><html><head><title>Blog</title>
      <link rel="alternate" type="application/rss+xml" href="/blog/rss.xml">
      </head><body>Posts</body></html>"""
    with pytest.raises(NotAFeedError, match=r"points to a feed at https://site\.test/blog/rss\.xml"):
        parse_feed(page, "https://site.test/blog/")


@pytest.mark.parametrize(
    ("name", "version_word", "first_title"),
    [
        ("rss-parser/heraldsun.rss", "RSS0.92", "The First Item"),  # RSS 0.92, ISO-8859-1
        ("rss-parser/rss-1.rss", "Science", "Food for fungi"),  # RSS 1.0 (RDF)
        ("rss-parser/guardian.rss", "Guardian", "Trump State of the Union"),  # RSS 2.0
        ("rss-parser/heise.atom", "heise", "Java-Anwendungsserver"),  # Atom
    ],
)
def test_rss_versions_and_atom_are_read(name: str, version_word: str, first_title: str) -> None:
    feed = parse_feed((FEED_SAMPLES / name).read_bytes(), FEED_URL)
    assert version_word in feed.title
    assert feed.items[0].title.startswith(first_title)


def test_windows_1251_feed_is_decoded_plain_and_gzipped() -> None:
    plain = parse_feed((FEED_SAMPLES / "node-feedparser/iconv.xml").read_bytes(), FEED_URL)
    zipped = parse_feed((FEED_SAMPLES / "node-feedparser/compressed.xml").read_bytes(), FEED_URL)
    assert plain.title.startswith("Новости Оренбурга")
    assert plain.items[0].title.startswith("\u0412 Бузулуке")  # the first letter is Cyrillic
    assert [i.url for i in plain.items] == [i.url for i in zipped.items]


def test_latin_1_feed_is_decoded() -> None:
    feed = parse_feed((FEED_SAMPLES / "rss-parser/encoding.rss").read_bytes(), FEED_URL)
    assert feed.title.startswith("Jornal de Notícias - Últimas")
    assert feed.items[0].title.startswith("Mãe de utente")


def test_published_dates_are_utc_datetimes() -> None:
    feed = parse_feed((FEED_SAMPLES / "trafilatura/feed1.atom").read_bytes(), FEED_URL)
    assert feed.items[0].published == datetime(2003, 12, 13, 18, 30, 2, tzinfo=UTC)


def test_bytes_that_look_like_a_path_are_never_opened(tmp_path: Path) -> None:
    # Given bytes that name a file, feedparser would read that file; a body is only ever a body.
    local_feed = tmp_path / "feed.xml"
    local_feed.write_bytes((FEED_SAMPLES / "trafilatura/feed2.rss").read_bytes())
    with pytest.raises(FeedParseError):
        parse_feed(str(local_feed).encode(), FEED_URL)


# Served over 127.0.0.1 ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def feed_server() -> LocalServer:
    def sample(name: str, content_type: str = "application/rss+xml", **headers: str) -> Reply:
        return Reply(200, (FEED_SAMPLES / name).read_bytes(), content_type=content_type, headers=headers)

    routes = {
        "/blog/feed.xml": sample("node-feedparser/rss-with-relative-html-urls-no-base.xml"),
        "/news/rss": sample("node-feedparser/rss-with-relative-urls.xml", "text/xml"),
        "/ru/rss.xml": sample("node-feedparser/iconv.xml", "application/xml"),
        "/gz/rss.xml": Reply(
            200,
            gzip.compress((FEED_SAMPLES / "rss-parser/guardian.rss").read_bytes()),
            content_type="application/rss+xml",
            headers={"Content-Encoding": "gzip"},
        ),
        "/page": sample("node-feedparser/notafeed.html", "text/html; charset=utf-8"),
        "/deflate": sample(
            "feedparser-py/compression/deflate-no-headers.z", **{"Content-Encoding": "deflate"}
        ),
    }
    server = LocalServer(routes).start()
    yield server  # type: ignore[misc]
    server.stop()


def test_relative_item_links_resolve_against_the_feed_url(
    feed_server: LocalServer, local_policy: FetchPolicy
) -> None:
    feed = fetch_feed(feed_server.url("/blog/feed.xml"), local_policy)
    assert [item.url for item in feed.items] == [feed_server.url("/blog/posts/post-1")]
    news = fetch_feed(feed_server.url("/news/rss"), local_policy)
    assert all(
        item.url.startswith(feed_server.url("/en/games/neverwinter/news/detail/")) for item in news.items
    )


def test_served_feeds_decode_their_charset_and_transfer_encoding(
    feed_server: LocalServer, local_policy: FetchPolicy
) -> None:
    assert (
        fetch_feed(feed_server.url("/ru/rss.xml"), local_policy).items[0].title.startswith("\u0412 Бузулуке")
    )
    assert len(fetch_feed(feed_server.url("/gz/rss.xml"), local_policy).items) == 55
    assert fetch_feed(feed_server.url("/deflate"), local_policy).items == []


def test_a_served_web_page_is_not_a_feed(feed_server: LocalServer, local_policy: FetchPolicy) -> None:
    with pytest.raises(NotAFeedError, match="web page, not a feed"):
        fetch_feed(feed_server.url("/page"), local_policy)
