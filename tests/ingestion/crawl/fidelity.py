"""How much of a site's knowledge reaches the index, measured without labels (issue #52).

For every page a reference is read from the HTML itself, independently of our extractor: the paragraphs,
list items and definitions of the page's main content (`<main>`, `[role=main]` or `<article>`, else the
body), leaving out blocks that are mostly link text (navigation, tables of contents) and anything inside
`<nav>`, `<header>`, `<footer>` or `[role=navigation]`. Against what we index (our extraction, cut into
chunks as ingestion does), per page:
  sentences   the share of the reference's sentences (four words or more) found in the index,
  paragraphs  the share of reference paragraphs found whole, inline markup and all,
  lost        a page not indexed whose reference holds >= LOST_PAGE_CHARS of prose,
  nav         link lists repeated on several pages of the site (menus, repeated tables of contents) or
              inside navigation markup, found in the index.
Text is compared as lowercase word tokens, so markup, punctuation and bullets don't count as differences.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html
from lxml import etree

from ingestion.chunk_settings import default_chunking
from ingestion.crawl.extract import DroppedPage, extract_page

LOST_PAGE_CHARS = 300
_BLOCKS = "p", "li", "dd", "dt", "td", "th", "pre", "blockquote"
_PARAGRAPHS = "p", "li", "dd"
_NAV = "nav", "header", "footer"
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


def tokens(text: str) -> str:
    """Lowercase word tokens joined by single spaces, padded, so `in` matches whole words only."""
    return " " + " ".join(_WORD.findall(text.lower())) + " "


def _text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _link_share(element: etree._Element, text: str) -> float:
    linked = sum(len(_text(a)) for a in element.iter("a"))
    return linked / max(len(text), 1)


def _in_navigation(element: etree._Element) -> bool:
    return any(
        ancestor.tag in _NAV or ancestor.get("role") == "navigation" for ancestor in element.iterancestors()
    )


@dataclass
class Reference:
    paragraphs: list[str] = field(default_factory=list)
    link_lists: list[str] = field(default_factory=list)  # texts of blocks made of links
    content: str = ""  # the main content's text outside navigation markup, as tokens
    code: str = ""  # the text of its code blocks, as tokens
    nav_lists: list[str] = field(default_factory=list)  # ... of those inside navigation markup

    @property
    def prose_chars(self) -> int:
        return sum(len(p) for p in self.paragraphs)

    def sentences(self) -> list[str]:
        found = []
        for paragraph in self.paragraphs:
            found += [s for s in _SENTENCE_END.split(paragraph) if len(s.split()) >= 4]
        return found


def reference(html: bytes) -> Reference:
    tree = lxml.html.fromstring(html)
    etree.strip_elements(tree, "script", "style", "noscript", "template", with_tail=False)
    roots = tree.xpath("//main | //*[@role='main'] | //article") or tree.xpath("//body") or [tree]
    root = roots[0]
    ref = Reference()
    for element in root.iter(*_PARAGRAPHS):
        if element.tag == "p" and any(a.tag == "p" for a in element.iterancestors()):
            continue
        if element.tag in ("li", "dd") and element.xpath(".//p | .//ul | .//ol | .//dl | .//div | .//pre"):
            continue  # a container: its own paragraphs count
        text = _text(element)
        if len(text) < 20 or _in_navigation(element) or _link_share(element, text) > 0.5:
            continue
        ref.paragraphs.append(text)
    content = copy.deepcopy(root)
    for element in content.xpath(".//nav | .//header | .//footer | .//*[@role='navigation']"):
        element.drop_tree()
    ref.content = tokens(_text(content))
    ref.code = " ".join(tokens("".join(pre.itertext())) for pre in root.iter("pre"))
    for element in tree.iter("ul", "ol", "dl", "table", "div"):
        links = element.xpath(".//a[normalize-space()]")
        text = _text(element)
        # A link list whose text is also the main content's (its headings in a row) tells nothing apart.
        if tokens(text) in ref.content:
            continue
        if len(links) >= 3 and len(text) >= 30 and _link_share(element, text) >= 0.8:
            ref.link_lists.append(text)
            if element.tag in _NAV or _in_navigation(element):
                ref.nav_lists.append(text)
    return ref


def indexed_text(html: bytes, url: str) -> str | None:
    """What ingestion stores for the page (its chunks, joined), or None when the page is not indexed."""
    try:
        page = extract_page(html, url)
    except DroppedPage:
        return None
    return "\n".join(piece.text for piece in default_chunking({}).chunks(page.text))


@dataclass
class PageResult:
    path: str
    indexed: bool
    prose_chars: int
    sentences: int
    sentences_found: int
    paragraphs: int
    paragraphs_whole: int
    missing: list[str]  # paragraphs not found whole, for reading
    nav_found: list[str]
    # The first and last lines of the indexed text (where a page's chrome sits) that are neither code nor a
    # paragraph of the reference, as tokens.
    edges: list[str] = field(default_factory=list)

    @property
    def lost(self) -> bool:
        return not self.indexed and self.prose_chars >= LOST_PAGE_CHARS


@dataclass
class SiteResult:
    site: str
    pages: list[PageResult]

    def _share(self, found: str, total: str) -> float:
        denominator = sum(getattr(p, total) for p in self.pages)
        return sum(getattr(p, found) for p in self.pages) / denominator if denominator else 1.0

    @property
    def sentence_share(self) -> float:
        return self._share("sentences_found", "sentences")

    @property
    def paragraph_share(self) -> float:
        return self._share("paragraphs_whole", "paragraphs")

    @property
    def lost(self) -> list[PageResult]:
        return [p for p in self.pages if p.lost]

    @property
    def nav_pages(self) -> list[PageResult]:
        return [p for p in self.pages if p.nav_found]

    def repeated_lines(self) -> list[str]:
        """Lines at the start or end of the indexed text of a quarter of the pages or more: chrome ("Prev |
        Home | Next", "Last updated ...", a copyright footer), whatever markup it came in."""
        counts = Counter(line for page in self.pages for line in set(page.edges))
        floor = max(3, len(self.pages) // 4)
        return sorted(line for line, n in counts.items() if n >= floor and len(line.split()) >= 2)

    def summary(self) -> dict:
        return {
            "site": self.site,
            "pages": len(self.pages),
            "indexed": sum(p.indexed for p in self.pages),
            "lost_pages": [p.path for p in self.lost],
            "sentences": round(self.sentence_share, 4),
            "paragraphs_whole": round(self.paragraph_share, 4),
            "pages_with_nav_text": len(self.nav_pages),
            "repeated_lines": self.repeated_lines(),
        }


def _edges(index: str, ref: Reference, size: int = 3) -> list[str]:
    lines = [tokens(line) for line in index.splitlines() if line.strip()]
    paragraphs = {tokens(p) for p in ref.paragraphs}
    return [line for line in lines[:size] + lines[-size:] if line not in ref.code and line not in paragraphs]


def site_pages(site: Path) -> list[Path]:
    """The site's HTML pages, without build folders (Sphinx's _static, _sources, _images)."""
    return sorted(
        p for p in site.rglob("*.html") if not any(part.startswith("_") for part in p.relative_to(site).parts)
    )


def measure_site(site: Path, pages: Iterable[Path] | None = None) -> SiteResult:
    pages = list(pages if pages is not None else site_pages(site))
    refs = {page: reference(page.read_bytes()) for page in pages}
    # A link list seen on a quarter of the pages or more is the site's navigation (a menu, a repeated table of
    # contents); one on two or three pages is a list the pages share (a role's variants).
    seen = Counter(text for ref in refs.values() for text in set(ref.link_lists))
    repeated = max(3, len(refs) // 4)
    results = []
    for page, ref in refs.items():
        rel = page.relative_to(site).as_posix()
        index = indexed_text(page.read_bytes(), f"http://127.0.0.1/{rel}")
        index_tokens = tokens(index or "")
        sentences = ref.sentences()
        whole = [p for p in ref.paragraphs if tokens(p) in index_tokens]
        navigation = {t for t in ref.link_lists if seen[t] >= repeated} | set(ref.nav_lists)
        results.append(
            PageResult(
                path=rel,
                indexed=index is not None,
                prose_chars=ref.prose_chars,
                sentences=len(sentences),
                sentences_found=sum(tokens(s) in index_tokens for s in sentences),
                paragraphs=len(ref.paragraphs),
                paragraphs_whole=len(whole),
                missing=[p for p in ref.paragraphs if tokens(p) not in index_tokens],
                nav_found=[t for t in navigation if index and len(t) >= 40 and tokens(t) in index_tokens],
                edges=_edges(index or "", ref),
            )
        )
    return SiteResult(site.name, results)
