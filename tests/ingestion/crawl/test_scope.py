from ingestion.crawl.scope import (
    Scope,
    canonical_url,
    page_cap_refusal,
    path_key,
    query_variant_refusal,
    refusal,
    repeats_segments,
)

SITE = Scope(start_urls=("https://example.com/",))


def test_canonical_url_folds_the_spellings_of_one_page():
    spellings = [
        "https://Example.com:443/docs/",
        "https://example.com/docs",
        "https://example.com/docs/index.html",
        "https://example.com/docs/#install",
        "https://example.com/docs?utm_source=mail&fbclid=1",
    ]
    assert {canonical_url(url) for url in spellings} == {"https://example.com/docs"}
    assert canonical_url("https://example.com/index.html") == "https://example.com/"


def test_canonical_url_sorts_the_query_and_resolves_relative_links():
    assert canonical_url("/search?b=2&a=1&utm_medium=x", "https://example.com/docs/") == (
        "https://example.com/search?a=1&b=2"
    )
    assert canonical_url("mailto:someone@example.com") is None
    assert canonical_url("javascript:void(0)", "https://example.com/") is None


def test_same_host_only_unless_subdomains_are_asked_for():
    assert refusal(SITE, "https://example.com/a", depth=1) is None
    assert refusal(SITE, "https://docs.example.com/a", depth=1) == "out_of_scope"
    assert refusal(SITE, "https://other.org/a", depth=1) == "out_of_scope"
    with_subdomains = Scope(start_urls=("https://www.example.com/",), include_subdomains=True)
    assert refusal(with_subdomains, "https://docs.example.com/a", depth=1) is None
    assert refusal(with_subdomains, "https://example.com/a", depth=1) is None
    assert refusal(with_subdomains, "https://notexample.com/a", depth=1) == "out_of_scope"


def test_path_prefix_keeps_the_section_only():
    docs = Scope(start_urls=("https://example.com/docs/",), path_prefix="/docs/")
    assert refusal(docs, "https://example.com/docs", depth=0) is None
    assert refusal(docs, "https://example.com/docs/install", depth=1) is None
    assert refusal(docs, "https://example.com/docsearch", depth=1) == "out_of_scope"
    assert refusal(docs, "https://example.com/blog/post", depth=1) == "out_of_scope"


def test_exclude_wins_over_include_and_globs_see_the_query():
    scope = Scope(
        start_urls=("https://example.com/",), include=("/docs/*",), exclude=("/docs/old/*", "*print=1*")
    )
    assert refusal(scope, "https://example.com/docs/new", depth=1) is None
    assert refusal(scope, "https://example.com/docs/old/page", depth=1) == "excluded"
    assert refusal(scope, "https://example.com/docs/new?print=1", depth=1) == "excluded"
    assert refusal(scope, "https://example.com/blog/post", depth=1) == "not_included"


def test_depth_and_page_caps():
    scope = Scope(start_urls=("https://example.com/",), max_depth=2, max_pages=3)
    assert refusal(scope, "https://example.com/a", depth=2) is None
    assert refusal(scope, "https://example.com/a", depth=3) == "too_deep"
    assert page_cap_refusal(scope, 2) is None
    assert page_cap_refusal(scope, 3) == "too_many_pages"


def test_trap_guards_refuse_long_urls_and_looping_paths():
    assert refusal(SITE, "https://example.com/" + "a" * 2100, depth=1) == "trap_long_url"
    assert refusal(SITE, "https://example.com/a/b/a/b", depth=1) == "trap_repeated_segments"
    assert refusal(SITE, "https://example.com/x/x/x", depth=1) == "trap_repeated_segments"
    assert not repeats_segments("/docs/api/docs", 2)
    assert not repeats_segments("/2024/01/01", 2)


def test_query_variants_of_one_path_are_capped():
    scope = Scope(start_urls=("https://example.com/",), max_query_variants=3)
    url = "https://example.com/calendar?month=4"
    assert path_key(url) == "https://example.com/calendar"
    assert query_variant_refusal(scope, url, {"month=1", "month=2"}) is None
    assert query_variant_refusal(scope, url, {"month=1", "month=2", "month=3"}) == "trap_query_variants"
    assert (
        query_variant_refusal(
            scope, "https://example.com/calendar?month=1", {"month=1", "month=2", "month=3"}
        )
        is None
    )
    assert (
        query_variant_refusal(scope, "https://example.com/calendar", {"month=1", "month=2", "month=3"})
        is None
    )
