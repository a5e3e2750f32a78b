from ingestion.crawl.links import page_links

PAGE = "https://example.com/docs/guide/"


def test_links_are_resolved_canonical_and_kept_once_in_order():
    html = """<html><body>
      <a href="install">Install</a>
      <a href="/docs/guide/install#step-2">Install, step 2</a>
      <a href="../api/index.html?utm_source=nav">API</a>
      <a href="https://other.org/x">Elsewhere</a>
      <a href="mailto:help@example.com">Mail</a>
      <a href="javascript:void(0)">Menu</a>
      <a>No address</a>
    </body></html>"""
    found = page_links(html, PAGE)
    assert found.links == (
        "https://example.com/docs/guide/install",
        "https://example.com/docs/api",
        "https://other.org/x",
    )
    assert found.index and found.follow


def test_base_href_decides_where_relative_links_point():
    html = '<html><head><base href="https://example.com/v2/"></head><body><a href="page">P</a></body></html>'
    assert page_links(html, PAGE).links == ("https://example.com/v2/page",)


def test_rel_nofollow_links_are_left_out():
    html = '<a href="/kept">K</a><a rel="external nofollow" href="/login">Log in</a>'
    assert page_links(html, PAGE).links == ("https://example.com/kept",)


def test_meta_nofollow_follows_no_link_and_noindex_still_follows():
    nofollow = (
        '<html><head><meta name="robots" content="nofollow"></head><body><a href="/a">A</a></body></html>'
    )
    assert page_links(nofollow, PAGE).links == ()
    assert not page_links(nofollow, PAGE).follow
    noindex = (
        '<html><head><meta name="ROBOTS" content="noindex"></head><body><a href="/a">A</a></body></html>'
    )
    found = page_links(noindex, PAGE)
    assert not found.index
    assert found.links == ("https://example.com/a",)


def test_x_robots_tag_header_counts_as_the_meta_tag():
    html = '<a href="/a">A</a>'
    found = page_links(html, PAGE, robots_header="googlebot: noindex, nofollow")
    assert (found.index, found.follow, found.links) == (False, False, ())
    assert not page_links(html, PAGE, robots_header="none").index
    assert page_links(html, PAGE, robots_header="noarchive").index
