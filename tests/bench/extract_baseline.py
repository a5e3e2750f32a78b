"""The main text of a web page, without its navigation, and the pages not worth keeping.

trafilatura does the extraction from HTML we fetched ourselves (its own fetcher would bypass our address
checks). A page is dropped, with a reason, when it is a "not found" page served as 200, a bot wall or a
script-only shell, or when it has too little text to answer anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import trafilatura
from lxml.html import HtmlElement
from trafilatura.utils import load_html

MIN_TEXT_CHARS = 200


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
        "not_found": "This page says it doesn't exist (a 'page not found' page), so we skipped it.",
        "bot_wall": "The site showed us a bot check instead of the page, so we couldn't read it.",
        "needs_javascript": "This page builds its text with JavaScript; it needs the browser crawler.",
    }

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.message = self.MESSAGES[reason]
        self.detail = detail or self.message
        super().__init__(f"{reason}: {self.detail}")


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
    r"<div[^>]+id=[\"'](?:root|app|__next|__nuxt|svelte|main-app)[\"'][^>]*>\s*</div>", re.IGNORECASE
)
_HEADER_LINK = re.compile(r"\s*[¶#§]+\s*$")


def extract_page(html: str | bytes, url: str, *, min_chars: int = MIN_TEXT_CHARS) -> ExtractedPage:
    """Title, main text and language of an HTML page; raises DroppedPage when it isn't worth keeping."""
    tree = load_html(html)
    if tree is None:
        raise DroppedPage("empty", f"{url}: not parseable as HTML")
    markup = html if isinstance(html, str) else html.decode("utf-8", errors="replace")
    page_title = _clean_title(" ".join(tree.xpath("//head/title//text()")))
    language = _markup_language(tree)
    noscript = " ".join(" ".join(n.itertext()) for n in tree.xpath("//noscript"))

    document = trafilatura.bare_extraction(
        tree, url=url, with_metadata=True, include_comments=False, include_tables=True, deduplicate=False
    )
    text = _clean_text(document.text if document is not None and document.text else "")
    title = _clean_title(document.title if document is not None and document.title else "") or page_title
    language = (getattr(document, "language", None) or language or "").split("-")[0].lower() or None

    if len(text) < 2000 and (_BOT_WALL_TITLE.search(page_title) or _BOT_WALL_MARKUP.search(markup[:200_000])):
        raise DroppedPage("bot_wall", f"{url}: title {page_title!r}")
    if len(text) < min_chars and (
        _NEEDS_JS.search(noscript) or _NEEDS_JS.search(text) or _SPA_ROOT.search(markup)
    ):
        raise DroppedPage("needs_javascript", f"{url}: {len(text)} characters of text without scripts")
    if (_NOT_FOUND.search(page_title) and len(text) < 3000) or (
        len(text) < 1000 and _NOT_FOUND.search(text[:300])
    ):
        raise DroppedPage("not_found", f"{url}: title {page_title!r}")
    if not text:
        raise DroppedPage("empty", f"{url}: no main text found")
    if len(text) < min_chars:
        raise DroppedPage("too_short", f"{url}: {len(text)} characters, fewer than {min_chars}")
    return ExtractedPage(title=title or url, text=text, language=language)


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
