"""The main text of a web page, without its navigation, and the pages not worth keeping.

The main content is found as a whole and rendered block by block (main_text.py: nothing inside it is
dropped for its length or its links); only a page with no element holding its paragraphs (text in bare
divs) goes to trafilatura, from HTML we fetched ourselves (its own fetcher would bypass our address
checks), in its fast mode and without its metadata pass. A page is dropped, with a reason, when it is a
"not found" page served as 200, a bot wall, a page whose text a script builds (decided from the markup: an
empty app root, a noscript warning, a state blob in place of the text), a site's search page (a search form
whose noscript asks for JavaScript to search: scripts would only add the results of a query, so it never
goes to the browser). It is skipped (`DroppedPage.skipped`: shown apart from failures, and the admin can
index it anyway) when it has no paragraph and is a list of links (a table of contents, by the share of its
text inside links) or only a title and a label. Length alone decides nothing: a one-sentence release note
is a page a reader wants, while a shell whose only text is its navigation is not, however long it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import trafilatura
from lxml import etree
from lxml.html import HtmlElement
from trafilatura.metadata import extract_title
from trafilatura.utils import load_html

from ingestion.crawl.main_text import main_text

if TYPE_CHECKING:
    from trafilatura.settings import Document

# Below this many characters of prose, a page whose markup says scripts build it goes to the browser.
MIN_TEXT_CHARS = 200
# A page with no paragraph is kept when it has this many words besides its title (code, a table); fewer is a
# title and a label, skipped as too short.
MIN_WORDS = 8
# A page without a paragraph whose text is mostly inside links is a table of contents or an index.
LINK_LIST_SHARE = 0.5


@dataclass(frozen=True)
class ExtractedPage:
    title: str
    text: str
    language: str | None  # primary language subtag ("en"), from trafilatura or the page's own markup


class DroppedPage(Exception):
    """The page is not worth indexing. `reason` is a stable code; `message` is for people."""

    MESSAGES = {
        "empty": "This page has no readable text.",
        "too_short": "This page has too little text to be useful, so we skipped it.",
        "not_found": "This page says it doesn't exist (a 'page not found' page), so we didn't index it.",
        "bot_wall": "The site showed us a bot check instead of the page, so we couldn't read it.",
        "needs_javascript": "This page builds its text with JavaScript; it needs the browser crawler.",
        "search_page": "This is the site's search page: its results need a query; it has nothing to index.",
        "link_list": "This page is only a list of links (a table of contents or an index), so we skipped it.",
    }

    # Reasons for a page deliberately left out (status "skipped", which the admin can override), as opposed
    # to pages we could not read (status "failed").
    SKIP_REASONS = frozenset({"too_short", "link_list", "search_page"})

    def __init__(self, reason: str, detail: str = "", *, text_chars: int = 0) -> None:
        self.reason = reason
        self.message = self.MESSAGES[reason]
        self.detail = detail or self.message
        self.text_chars = text_chars  # the size of the text found, shown beside a skipped page
        super().__init__(f"{reason}: {self.detail}")

    @property
    def skipped(self) -> bool:
        return self.reason in self.SKIP_REASONS


_NOT_FOUND = re.compile(
    r"\b(?:404|page\s+not\s+found|not\s+found|(?:page|file)\s+(?:does\s+not|doesn['\u2019]t)\s+exist|"
    r"no\s+longer\s+(?:available|exists)|(?:couldn['\u2019]t|could\s+not|can['\u2019]t|cannot)\s+(?:be\s+)?find\s+"
    r"(?:that|the|this)\s+page|page\s+(?:you\s+requested|you['\u2019]re\s+looking\s+for)\s+(?:could|can|does|was))",
    re.IGNORECASE,
)
_BOT_WALL_TITLE = re.compile(
    r"just a moment|attention required|access denied|are you a (?:robot|human)|security check|captcha|"
    r"ddos-guard|one more step|verify(?:ing)? you are (?:a )?human|bot (?:verification|detection)|"
    r"pardon our interruption|request unsuccessful",
    re.IGNORECASE,
)
_BOT_WALL_MARKUP = re.compile(
    r"/cdn-cgi/challenge-platform|cf-browser-verification|cf_chl_opt|checking your browser|captcha-delivery|"
    r"px-captcha|_incapsula_resource|verify you are (?:a )?human|unusual traffic from your|are you a robot",
    re.IGNORECASE,
)
_NEEDS_JS = re.compile(
    r"(?:enable|turn on|activate)\s+javascript|javascript\s+(?:is\s+)?(?:required|disabled|must be enabled)|"
    r"requires\s+javascript|without\s+javascript|javascript\s+to\s+(?:run|view|use)",
    re.IGNORECASE,
)
_SPA_ROOT = re.compile(
    r"<div[^>]+id=[\"'](?:root|app|__next|__nuxt|___gatsby|svelte|main-app|q-app|ember-app)[\"'][^>]*>\s*</div>"
    r"|<(?:app-root|ng-app)[^>]*>\s*</(?:app-root|ng-app)>|<div[^>]+(?:data-reactroot|ng-app)[^>]*>\s*</div>",
    re.IGNORECASE,
)
# Frameworks that ship a page's content as a state blob for scripts to render.
_STATE_BLOB = re.compile(
    r"__NEXT_DATA__|window\.__NUXT__|__INITIAL_STATE__|__APOLLO_STATE__|__PRELOADED_STATE__|__remixContext",
    re.IGNORECASE,
)
NOTICE = "a notice asking for JavaScript"  # one of script_signal's answers
# A search form: what a site's search page is for. Its script-built part is the results of a query.
_SEARCH_FORM = (
    "//form[.//input[@type='search' or @name='q' or @name='query' or @name='search' or @name='s']]"
    " | //*[@role='search']"
)
_SENTENCE_END = re.compile(r"[.!?;:)\"'\u201d\u3002\uff01\uff1f]$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_HEADER_LINK = re.compile(r"\s*[¶#§]+\s*$")


def _unwrap_code_spans(tree: HtmlElement) -> None:
    """Syntax highlighting wraps every token of a code sample in a span (Sphinx's API pages: 40 % of their
    elements). trafilatura's cost grows with the elements it walks, and it flattened such code onto one line;
    without the spans it walks a third fewer elements and keeps each line of the code as written."""
    for code in tree.xpath("//pre[.//span] | //code[.//span]"):
        etree.strip_tags(code, "span")


def extract_page(
    html: str | bytes, url: str, *, min_chars: int = MIN_TEXT_CHARS, keep_short: bool = False
) -> ExtractedPage:
    """Title, main text and language of an HTML page; raises DroppedPage when it isn't worth keeping.
    `keep_short` (the admin's "index it anyway") keeps a page that would be skipped for its little prose, for
    being a list of links or for being a search page; pages with no text, not-found pages and bot walls are
    never kept."""
    tree = load_html(html)
    if tree is None:
        raise DroppedPage("empty", f"{url}: not parseable as HTML")
    _unwrap_code_spans(tree)
    markup = html if isinstance(html, str) else html.decode("utf-8", errors="replace")
    page_title = _clean_title(" ".join(tree.xpath("//head/title//text()")))
    language = _markup_language(tree)
    noscript = " ".join(" ".join(n.itertext()) for n in tree.xpath("//noscript"))
    search_form = bool(tree.xpath(_SEARCH_FORM))  # before extraction prunes the tree

    # The title is all the metadata we keep, so trafilatura's metadata pass (dates, authors, categories: half
    # of its time) is skipped; its title rules run alone, before extraction prunes the tree.
    main_title = _clean_title(extract_title(tree) or "")
    main = main_text(tree, keep_link_lists=keep_short)
    if main is not None:
        text, link_share = _clean_text(main.text), main.link_share
    else:
        # No element holds the page's paragraphs (text in bare divs): trafilatura's judgement of each element.
        # A Document: the dict is only for the deprecated as_dict=True.
        document = cast(
            "Document | None",
            trafilatura.bare_extraction(
                tree,
                url=url,
                with_metadata=False,
                include_comments=False,
                include_tables=True,
                deduplicate=False,
                fast=True,
            ),
        )
        text = _clean_text(document.text if document is not None and document.text else "")
        link_share = 0.0
    title = main_title or page_title
    language = (language or "").split("-")[0].lower() or None

    if len(text) < 2000 and (_BOT_WALL_TITLE.search(page_title) or _BOT_WALL_MARKUP.search(markup[:200_000])):
        raise DroppedPage("bot_wall", f"{url}: title {page_title!r}")
    prose = prose_chars(text)
    if prose < min_chars and (signal := script_signal(markup, noscript, text)):
        if not _is_search_page(search_form, noscript, signal):
            detail = f"{url}: {prose} characters of prose without scripts; {signal}"
            raise DroppedPage("needs_javascript", detail)
        # A search page the admin asked for is kept with whatever text it has of its own (the search tips).
        if not (keep_short and text):
            raise DroppedPage(
                "search_page", f"{url}: a search form, JavaScript asked for to search", text_chars=len(text)
            )
    if (_NOT_FOUND.search(page_title) and len(text) < 3000) or (
        len(text) < 1000 and _NOT_FOUND.search(text[:300])
    ):
        raise DroppedPage("not_found", f"{url}: title {page_title!r}")
    if not text and link_share >= LINK_LIST_SHARE and not keep_short:
        raise DroppedPage("link_list", f"{url}: only links ({link_share:.0%} of its text)")
    if not text:
        raise DroppedPage("empty", f"{url}: no main text found")
    if not prose and not keep_short:
        # No paragraph at all: a list of links is skipped as such; a few words (a title, a label) as too
        # short; anything else (code, a table, a glossary) is a reference page and kept.
        if link_share >= LINK_LIST_SHARE:
            raise DroppedPage(
                "link_list",
                f"{url}: {link_share:.0%} of its text is links, no paragraph",
                text_chars=len(text),
            )
        words = len(text.split()) - len(title.split())
        if words < MIN_WORDS:
            raise DroppedPage("too_short", f"{url}: {words} words besides the title", text_chars=len(text))
    return ExtractedPage(title=title or url, text=text, language=language)


def prose_chars(text: str) -> int:
    """Characters in blocks that read as sentences, as opposed to navigation, labels and link lists: a
    paragraph (hard-wrapped lines joined: the main text has a block per line) of four words or more ending
    like a sentence, any block of 80 characters or more, or a block of CJK text. A short line asking for
    JavaScript is no prose."""
    total = 0
    for line in text.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if not line or (len(line) < 200 and _NEEDS_JS.search(line)):
            continue
        if (
            len(line) >= 80
            or (len(line.split()) >= 4 and _SENTENCE_END.search(line))
            or (len(line) >= 20 and _CJK.search(line))
        ):
            total += len(line)
    return total


def script_signal(markup: str, noscript: str, text: str) -> str:
    """Why the markup says scripts build this page's text, or "" when it doesn't: an empty app root, a
    noscript (or visible) notice asking for JavaScript, or a framework's state blob in an inline script."""
    if _SPA_ROOT.search(markup):
        return "an empty app root"
    if _NEEDS_JS.search(noscript) or _NEEDS_JS.search(text):
        return NOTICE
    if _STATE_BLOB.search(markup):
        return "content shipped as script state"
    return ""


def _is_search_page(search_form: bool, noscript: str, signal: str) -> bool:
    """A site's own search page (Sphinx's search.html): the only thing scripts build there is the results of
    a query typed into its form, so a browser would render the same empty page at a hundred times the cost.
    Only when the notice is the sole signal and it speaks of search: an app shell with a search box in its
    header still goes to the browser."""
    return search_form and signal == NOTICE and "search" in noscript.lower()


def looks_like_not_found(title: str) -> bool:
    """Whether a page title says the page doesn't exist."""
    return bool(_NOT_FOUND.search(title))


def _clean_title(title: str) -> str:
    # Sphinx and many static-site generators end headings with a permalink sign.
    return _HEADER_LINK.sub("", " ".join(title.split()))


def _clean_text(text: str) -> str:
    return "\n".join(
        _HEADER_LINK.sub("", line) if line.rstrip().endswith("¶") else line for line in text.splitlines()
    ).strip()


def _markup_language(tree: HtmlElement) -> str | None:
    for value in (
        tree.get("lang"),
        tree.get("{http://www.w3.org/XML/1998/namespace}lang"),
        *tree.xpath(
            "//meta[@http-equiv and translate(@http-equiv,'CONTENT-LANGUAGE','content-language')"
            "='content-language']/@content"
        ),
        *tree.xpath("//meta[@property='og:locale']/@content"),
    ):
        if value and value.strip():
            return value.strip().replace("_", "-")
    return None
