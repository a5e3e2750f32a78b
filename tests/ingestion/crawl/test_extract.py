"""Main-content extraction, and the pages we drop instead of indexing."""

from __future__ import annotations

import pytest

from ingestion.crawl.extract import DroppedPage, extract_page, looks_like_not_found
from ingestion.crawl.fetch import FetchPolicy
from ingestion.crawl.http import HttpStrategy
from tests.ingestion.crawl.servers import FLASK_DOCS, serving

NAV_TEXT = [
    "Quick search",
    "Navigation",
    "Previous topic",
    "Next topic",
    "Project Links",
    "Donate",
    "Contents",
]
LOREM = (
    "Grounded reads the pages of a site and keeps their main text, so that an agent can answer questions "
    "from it with citations. This paragraph is long enough to count as real content for the extractor. "
)


def _extract_flask(path: str):  # type: ignore[no-untyped-def]
    return extract_page((FLASK_DOCS / path).read_bytes(), f"http://docs.test/{path}")


@pytest.mark.parametrize(
    ("path", "title", "phrase"),
    [
        ("quickstart.html", "Quickstart", "A Minimal Application"),
        ("tutorial/views.html", "Blueprints and Views", "A view function is the code you write"),
        ("patterns/sqlite3.html", "Using SQLite 3 with Flask", "sqlite3"),
        ("deploying/gunicorn.html", "Gunicorn", "Gunicorn is a pure Python WSGI server"),
    ],
)
def test_flask_pages_give_their_title_and_main_text_without_navigation(
    path: str, title: str, phrase: str
) -> None:
    page = _extract_flask(path)
    assert page.title == title
    assert phrase in page.text
    assert page.language == "en"
    for nav in NAV_TEXT:
        assert nav not in page.text
    assert "¶" not in page.text


def test_highlighted_code_keeps_its_lines() -> None:
    """Sphinx wraps each token of a code sample in a span; the sample still reads line by line."""
    page = _extract_flask("api.html")
    assert '@app.route("/")\ndef index():\n    ...\n' in page.text
    assert "app = Flask('yourapplication')\napp = Flask(__name__.split('.')[0])\n" in page.text
    plain = extract_page(
        "<html><body><article><p>" + LOREM + "</p><pre><span class='k'>def</span> <span class='nf'>f</span>"
        "():\n    <span class='k'>return</span> 1</pre></article></body></html>",
        "http://docs.test/code",
    )
    assert "def f():\n    return 1" in plain.text


def test_pages_fetched_over_http_extract_the_same(local_policy: FetchPolicy) -> None:
    with serving(root=FLASK_DOCS) as server:
        fetched = HttpStrategy().fetch_page(server.url("/quickstart.html"), local_policy)
    page = extract_page(fetched.html, fetched.final_url)
    assert page == _extract_flask("quickstart.html")


def test_the_flask_404_page_is_dropped_as_not_found() -> None:
    with pytest.raises(DroppedPage) as caught:
        _extract_flask("404.html")
    assert caught.value.reason == "not_found"
    assert "doesn't exist" in caught.value.message


@pytest.fixture
def local_policy() -> FetchPolicy:
    return FetchPolicy(allowed_networks=("127.0.0.1/32",))


def _html(title: str, body: str, lang: str = "en", head: str = "") -> str:
    head_html = f"<head><title>{title}</title>{head}</head>"
    return f"<!doctype html><html lang='{lang}'>{head_html}<body>{body}</body></html>"


def test_an_ordinary_article_is_kept() -> None:
    page = extract_page(
        _html("Guide", f"<nav>Home | Blog</nav><article><h1>Guide</h1><p>{LOREM * 2}</p></article>"),
        "https://a.test/",
    )
    assert page.title == "Guide"
    assert page.text.startswith("Guide") or LOREM.strip()[:40] in page.text
    assert "Home | Blog" not in page.text


@pytest.mark.parametrize(
    ("title", "body"),
    [
        ("Page not found", "<h1>Oops</h1><p>We looked everywhere.</p>"),
        ("404 | Acme", "<h1>Error</h1><p>Try the home page.</p>"),
        ("Acme", "<main><h1>Sorry, we couldn't find that page</h1><p>It may have moved.</p></main>"),
        ("Acme", "<main><h1>Page not found</h1><p>The page you requested could not be found.</p></main>"),
    ],
)
def test_soft_404_pages_are_dropped(title: str, body: str) -> None:
    with pytest.raises(DroppedPage) as caught:
        extract_page(_html(title, body), "https://a.test/missing")
    assert caught.value.reason == "not_found"


@pytest.mark.parametrize(
    ("title", "body"),
    [
        (
            "Just a moment...",
            "<p>Checking your browser before accessing a.test.</p>"
            "<script src='/cdn-cgi/challenge-platform/h/b/orchestrate/jsch/v1'></script>",
        ),
        ("Attention Required! | Cloudflare", "<p>Please complete the security check to access a.test</p>"),
        ("Access Denied", "<p>You don't have permission to access this server.</p>"),
        ("Acme", "<p>Please verify you are a human.</p><div id='px-captcha'></div>"),
    ],
)
def test_bot_walls_are_dropped(title: str, body: str) -> None:
    with pytest.raises(DroppedPage) as caught:
        extract_page(_html(title, body), "https://a.test/")
    assert caught.value.reason == "bot_wall"


@pytest.mark.parametrize(
    "body",
    [
        "<noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div>"
        "<script src='/static/js/main.js'></script>",
        "<div id='__next'></div><script src='/_next/static/chunks/main.js'></script>",
        "<p>This site requires JavaScript.</p>",
    ],
)
def test_script_only_shells_are_dropped_as_needing_javascript(body: str) -> None:
    with pytest.raises(DroppedPage) as caught:
        extract_page(_html("App", body), "https://a.test/")
    assert caught.value.reason == "needs_javascript"
    assert "browser" in caught.value.message


def test_a_long_page_mentioning_javascript_or_captcha_is_kept() -> None:
    body = (
        f"<article><h1>Forms</h1><p>{LOREM * 15} Enable JavaScript to use the CAPTCHA widget.</p></article>"
    )
    assert "CAPTCHA widget" in extract_page(_html("Forms guide", body), "https://a.test/forms").text


def test_a_page_of_a_title_and_a_label_is_skipped_as_too_short() -> None:
    with pytest.raises(DroppedPage) as caught:
        extract_page(_html("Hi", "<article><h1>Hi</h1><p>Draft</p></article>"), "https://a.test/")
    assert caught.value.reason == "too_short"
    assert caught.value.skipped and caught.value.text_chars == len("Hi\nDraft")


def test_a_one_line_sentence_is_a_page_worth_keeping() -> None:
    page = extract_page(_html("Hi", "<article><p>Just a short note here.</p></article>"), "https://a.test/")
    assert page.text == "Just a short note here."


def test_empty_input_is_dropped() -> None:
    with pytest.raises(DroppedPage):
        extract_page(b"", "https://a.test/")


def test_declared_charset_in_bytes_is_honoured_and_language_kept() -> None:
    body = f"<article><h1>Übersicht</h1><p>Größere Änderungen für Benutzer. {LOREM * 2}</p></article>"
    html = _html("Übersicht", body, lang="de-AT", head="<meta charset='iso-8859-1'>").encode("iso-8859-1")
    page = extract_page(html, "https://a.test/de/")
    assert page.title == "Übersicht"
    assert "Größere Änderungen" in page.text
    assert page.language == "de"


def test_not_found_titles() -> None:
    assert looks_like_not_found("Page Not Found — Flask Documentation (2.2.x)")
    assert looks_like_not_found("404")
    assert not looks_like_not_found("Pricing — Acme")


NAVIGATION = "".join(f"<li><a href='/s/{i}'>Section {i}</a></li>" for i in range(60))


def test_a_one_sentence_release_note_is_kept() -> None:
    note = "Fixed a crash when the configuration file is empty; upgrading is recommended for all users."
    page = extract_page(
        _html("Release 2.1.3", f"<article><h1>Release 2.1.3</h1><p>{note}</p></article>"), "https://a.test/r"
    )
    assert note in page.text


def test_a_page_of_navigation_only_is_dropped_as_too_short() -> None:
    body = "<article><h1>Modules</h1><ul><li>flask</li><li>flask.json</li></ul></article>"
    with pytest.raises(DroppedPage) as caught:
        extract_page(_html("Modules", body), "https://a.test/m")
    assert caught.value.reason == "too_short"


@pytest.mark.parametrize(
    "shell",
    [
        "<div id='root'></div><noscript>You need to enable JavaScript to run this app.</noscript>",
        "<div id='app'></div>",
        "<app-root></app-root>",
        "<script id='__NEXT_DATA__' type='application/json'>{\"props\": {}}</script>",
    ],
)
def test_a_shell_is_sent_to_the_browser_however_long_its_navigation(shell: str) -> None:
    html = _html("App", f"<header><nav><ul>{NAVIGATION}</ul></nav></header><main>{shell}</main>")
    with pytest.raises(DroppedPage) as caught:
        extract_page(html, "https://a.test/app")
    assert caught.value.reason == "needs_javascript"


def test_a_server_rendered_page_with_script_state_is_kept() -> None:
    body = (
        f"<main><article><h1>Pricing</h1><p>{LOREM * 3}</p></article></main>"
        "<script id='__NEXT_DATA__' type='application/json'>{\"props\": {}}</script>"
        "<div id='modal-root'></div>"
    )
    assert "citations" in extract_page(_html("Pricing", body), "https://a.test/pricing").text


def test_sphinx_search_page_is_dropped_from_its_markup_without_the_browser() -> None:
    # Its noscript asks for JavaScript "to enable the search functionality": scripts only build the results of
    # a query typed into its form, so rendering it would find nothing more.
    with pytest.raises(DroppedPage) as caught:
        _extract_flask("search.html")
    assert caught.value.reason == "search_page"


SEARCH_FORM = "<form action='/search' role='search'><input type='search' name='q'></form>"


@pytest.mark.parametrize(
    "body",
    [
        # An app shell with a search box in its header: the content itself is built by scripts.
        f"<header>{SEARCH_FORM}</header><noscript>Please enable JavaScript to search and to run this app."
        "</noscript><div id='root'></div>",
        # A search form, but the notice is about the page's content, not about searching.
        f"<header>{SEARCH_FORM}</header><noscript>Enable JavaScript to view this page.</noscript>",
    ],
)
def test_a_page_with_a_search_box_whose_content_needs_scripts_still_goes_to_the_browser(body: str) -> None:
    with pytest.raises(DroppedPage) as caught:
        extract_page(_html("App", body), "https://a.test/app")
    assert caught.value.reason == "needs_javascript"


def test_a_search_page_without_a_form_is_not_taken_for_one() -> None:
    body = "<h1>Search</h1><noscript>Please activate JavaScript to enable the search.</noscript>"
    with pytest.raises(DroppedPage) as caught:
        extract_page(_html("Search", body), "https://a.test/search")
    assert caught.value.reason == "needs_javascript"


# Issue #52: the classes of loss found on unseen sites, each on markup that shows it.
HARD_WRAPPED = """<div role="main"><h1>Release 4.2.1</h1>
<p>Fixes a security issue
and several bugs.</p>
<p>Released on
2022-10-14.</p></div>"""


def test_hard_wrapped_short_release_notes_are_kept_as_whole_sentences() -> None:
    """Class: prose judged line by line, so a page of sentences wrapped at ~72 columns read as navigation."""
    page = extract_page(_html("Release 4.2.1", HARD_WRAPPED), "https://a.test/r")
    assert "Fixes a security issue and several bugs." in page.text.splitlines()
    assert "Released on 2022-10-14." in page.text.splitlines()


DOCBOOK = """
<div class="navheader"><table width="100%" summary="Navigation header">
<tr><th colspan="3" align="center">Chapter 2. First steps</th></tr>
<tr><td align="left"><a accesskey="p" href="start.html">Prev</a> </td><th></th>
<td align="right"> <a accesskey="n" href="next.html">Next</a></td></tr></table><hr/></div>
<div class="chapter"><div class="titlepage"><h1 class="title">Chapter 2. First steps</h1></div>
<div class="toc"><p><b>Table of Contents</b></p><dl class="toc">
<dt><span class="section"><a href="#a">2.1. Workflow</a></span></dt>
<dt><span class="section"><a href="#b">2.2. Choose your program</a></span></dt>
<dt><span class="section"><a href="#c">2.3. Get the program</a></span></dt></dl></div>
<p>The package can be installed with <span class="command"><strong>apt install</strong></span>
<code class="literal">evolution</code>, which pulls in its
<em>dependencies</em> too.</p>
<div class="tip" style="margin-left: 0.5in"><table border="0" summary="Tip">
<tr><td rowspan="2" align="center" valign="top" width="25"><img alt="[Tip]" src="tip.png"/></td>
<th align="left">Tip</th></tr>
<tr><td align="left" valign="top"><p>Run <code>lintian</code> on every build to catch
policy violations early.</p></td></tr></table></div>
<div class="note"><h3 class="title">Note</h3><p>Back to basics: a source package is
a tarball plus a <code>debian</code> directory.</p></div>
</div>
<div class="navfooter"><hr/><table width="100%" summary="Navigation footer">
<tr><td align="left"><a accesskey="p" href="start.html">Prev</a> </td>
<td align="center"><a accesskey="h" href="index.html">Home</a></td>
<td align="right"> <a accesskey="n" href="next.html">Next</a></td></tr></table></div>"""


def test_docbook_keeps_sentences_with_inline_markup_and_admonitions_without_navigation() -> None:
    """Classes: a sentence cut before its first inline element; paragraphs in tip/note boxes (layout tables)
    dropped; navigation bars and the chapter's table of contents indexed as text."""
    page = extract_page(_html("Chapter 2. First steps", DOCBOOK), "https://a.test/first.html")
    lines = page.text.splitlines()
    assert (
        "The package can be installed with apt install evolution, which pulls in its dependencies too."
        in lines
    )
    assert "Run lintian on every build to catch policy violations early." in lines
    assert "Back to basics: a source package is a tarball plus a debian directory." in lines
    for navigation in ("Prev", "Next", "Home", "Choose your program", "Table of Contents"):
        assert navigation not in page.text


def test_a_short_definition_whose_text_is_half_a_link_is_kept() -> None:
    """Class: a configuration value's one-line description dropped for its link density."""
    body = (
        "<div role='main'><h1>Configuration</h1><p>" + LOREM + "</p><dl><dt>epub_basename</dt><dd><p>The "
        "basename for the epub file. It defaults to the <a href='#project'><code>project</code></a> name.</p>"
        "</dd></dl></div>"
    )
    page = extract_page(_html("Configuration", body), "https://a.test/config")
    assert "The basename for the epub file. It defaults to the project name." in page.text


def test_a_table_of_contents_is_skipped_as_a_list_of_links_unless_kept() -> None:
    """A page that is only links is skipped by the share of its text in links, whatever its length."""
    links = "".join(
        f"<li><a href='/api/{i}.html'>Module number {i} of the API reference</a></li>" for i in range(60)
    )
    html = _html("API index", f"<div role='main'><h1>API index</h1><ul>{links}</ul></div>")
    with pytest.raises(DroppedPage) as caught:
        extract_page(html, "https://a.test/api/")
    assert caught.value.reason == "link_list" and caught.value.skipped
    kept = extract_page(html, "https://a.test/api/", keep_short=True)
    assert "Module number 59 of the API reference" in kept.text


def test_a_man_page_keeps_the_one_line_description_in_its_header() -> None:
    body = (
        "<div id='header'><h1>git-check-attr(1) Manual Page</h1><h2>NAME</h2><div class='sectionbody'>"
        "<p>git-check-attr - Display gitattributes information</p></div></div>"
        f"<div id='content'><div class='sect1'><h2>DESCRIPTION</h2><p>{LOREM * 6}</p></div></div>"
    )
    page = extract_page(_html("git-check-attr(1)", body), "https://a.test/git-check-attr.html")
    assert "git-check-attr - Display gitattributes information" in page.text


def test_content_hidden_until_clicked_is_kept() -> None:
    """A help centre's accordion hides each answer until its question is clicked."""
    body = (
        "<main><h1>FAQ</h1><div class='faq'><button aria-expanded='false'>How long do refunds take?</button>"
        "<div class='answer' hidden><p>Refunds reach your card within five working days.</p></div>"
        "<div class='answer' style='display: none'><p>Shipping is free on orders over 40 euros.</p></div>"
        "</div></main>"
    )
    page = extract_page(_html("FAQ", body), "https://a.test/faq")
    assert "Refunds reach your card within five working days." in page.text
    assert "Shipping is free on orders over 40 euros." in page.text


def test_a_main_element_holding_little_of_the_page_is_not_taken_for_its_content() -> None:
    body = (
        "<main><p>Welcome to our help centre, friend.</p></main>"
        f"<div class='content'><h2>Returns</h2><p>{LOREM * 4}</p>"
        "<p>Items can be returned within 30 days.</p></div>"
    )
    page = extract_page(_html("Help", body), "https://a.test/help")
    assert "Items can be returned within 30 days." in page.text
