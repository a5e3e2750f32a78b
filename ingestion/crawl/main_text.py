"""A page's main content as text, block by block, with nothing of it left out (issue #52).

trafilatura judges each element on its own (link density, length, position), which on documentation drops
short definitions whose text is half a link, paragraphs inside admonition boxes and layout tables, and
splits a sentence at its first nested inline element. Here the main content is found first, as a whole,
and then rendered in full:
- the root is the page's `<main>` (or `[role=main]`, or its only `<article>`); without one, the deepest
  element that holds nearly all of the page's paragraph text (a chapter beside its navigation bars);
- inside it, navigation is left out by what it is: `<nav>`, `[role=navigation]`, page footers, and blocks
  that are lists of links (three links or more, nearly all of their text linked: menus, breadcrumbs,
  "Prev | Home | Next", a chapter's table of contents);
- every other block becomes lines: a paragraph on one line, inline markup and hard wraps joined ("the
  command <code>dh</code> does" stays one sentence), list items and definitions as "- " items, table rows as
  "| a | b |", code blocks line by line as written, and boxes (notes, tips, warnings) like any other block.
A page whose content root is nothing but links is reported as such (`link_share`), so the caller can skip
a table of contents by what it is rather than by its length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree
from lxml.html import HtmlElement

# Elements that never hold content a reader came for.
_NEVER = ("script", "style", "noscript", "template", "svg", "button", "select", "textarea", "iframe", "nav")
_BLOCKS = frozenset(
    "address article aside blockquote body center dd details div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr li main ol p pre section summary table tbody thead tfoot tr ul "
    "caption".split()
)
_PARAGRAPH_LIKE = ("p", "pre", "dd", "li", "blockquote", "td")
# Permalink signs that generators append to headings and definitions.
_PERMALINK = re.compile(r"^[\s¶#§🔗]*$")
# A root must hold this share of the page's paragraph text to stand for the page: what it leaves out beside
# it is navigation, whose text is in links, and not a long page's other sections.
_ROOT_SHARE = 0.97
_LANDMARK_SHARE = 0.5
_LINK_LIST_SHARE = 0.8
_LABEL_CHARS = 30
# A page footer spelt as a div ("Last updated ..."), when it holds no paragraph.
_FOOTER = re.compile(r"(?:^|[\s_-])footer(?:$|[\s_-])", re.IGNORECASE)


@dataclass(frozen=True)
class MainText:
    text: str
    link_share: float  # the share of the root's text inside links, before navigation was left out


def _text_of(element: HtmlElement) -> str:
    return " ".join("".join(element.itertext()).split())


def _linked_chars(element: HtmlElement) -> int:
    return sum(len(_text_of(a)) for a in element.iter("a"))


def is_link_list(element: HtmlElement) -> bool:
    """Three links or more and nearly all of the text inside them, or besides them only a label ("Table of
    Contents", "On this page"): a menu, breadcrumbs, a table of contents."""
    links = [a for a in element.iter("a") if _text_of(a)]
    if len(links) < 3:
        return False
    text = _text_of(element)
    linked = _linked_chars(element)
    if not text:
        return False
    share = linked / len(text)
    return share >= _LINK_LIST_SHARE or (share >= 0.5 and len(text) - linked <= _LABEL_CHARS)


def _names(element: HtmlElement) -> str:
    return f"{element.get('id', '')} {element.get('class', '')}"


def _prune(root: HtmlElement, *, link_lists: bool) -> None:
    """Leave out what is not content: scripts, navigation, page footers and (unless the admin asked to keep
    them) lists of links. Hidden parts stay: a help centre's accordion and tabs hide answers until clicked."""
    for element in list(root.iter(etree.Element)):
        if element is root or element.getparent() is None:
            continue
        tag = element.tag if isinstance(element.tag, str) else ""
        if (
            tag in _NEVER
            or element.get("role") in ("navigation", "search", "contentinfo", "banner")
            or ((tag == "footer" or _FOOTER.search(_names(element))) and not element.xpath(".//p"))
            or (tag == "header" and (element.xpath(".//nav") or is_link_list(element)))
            or (
                tag == "a"
                and _PERMALINK.match(_text_of(element) or "")
                and element.get("href", "").startswith("#")
            )
        ):
            element.drop_tree()
    if not link_lists:
        return
    # Link lists are judged after the rest is gone, outermost first, so a list that survives is content.
    for element in list(root.iter("ul", "ol", "dl", "table", "div", "p")):
        if element is not root and element.getparent() is not None and is_link_list(element):
            element.drop_tree()


def _paragraph_chars(root: HtmlElement) -> dict[HtmlElement, int]:
    """Characters of paragraph text outside links under each element: what navigation beside the content
    hardly has. One walk: each outermost paragraph-like element adds its count to all its ancestors."""
    counts: dict[HtmlElement, int] = {}
    stack = [root]
    while stack:
        element = stack.pop()
        if element.tag in _PARAGRAPH_LIKE:
            chars = len(_text_of(element)) - _linked_chars(element)
            if chars > 0:
                for holder in (element, *element.iterancestors()):
                    counts[holder] = counts.get(holder, 0) + chars
        else:
            stack.extend(child for child in element if isinstance(child.tag, str))
    return counts


def find_root(tree: HtmlElement) -> HtmlElement | None:
    """The element holding the page's main content (see the module's docstring)."""
    body = tree.find(".//body")
    root = body if body is not None else tree
    counts = _paragraph_chars(root)
    mains = tree.xpath("//main | //*[@role='main']")
    articles = tree.xpath("//article[not(ancestor::article)]")
    if mains or len(articles) == 1:
        landmark = max(mains or articles, key=lambda e: len(_text_of(e)))
        # A landmark that holds little of the page's paragraphs (a hero <main> beside the real content) is
        # not taken at its word.
        if counts.get(landmark, 0) >= _LANDMARK_SHARE * counts.get(root, 0):
            return landmark
    total = counts.get(root, 0)
    if not total:
        return None
    while True:
        inner = next((c for c in root if counts.get(c, 0) >= _ROOT_SHARE * total), None)
        if inner is None or any(_is_section(c) for c in root if c is not inner and isinstance(c.tag, str)):
            return root
        root = inner


def _is_section(element: HtmlElement) -> bool:
    """A heading with a paragraph under it (a man page's NAME line in its header): content, not navigation."""
    return bool(element.xpath(".//h1 | .//h2 | .//h3 | .//h4")) and any(
        len(_text_of(p)) - _linked_chars(p) >= 10 for p in element.iter("p")
    )


class _Lines:
    """The text being written: whole lines, and the inline text of the block being read."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.inline: list[str] = []
        self.prefix = ""

    def add(self, text: str) -> None:
        self.inline.append(text)

    def flush(self) -> None:
        text = " ".join("".join(self.inline).split())
        self.inline = []
        if text and not _PERMALINK.match(text):
            self.lines.append(self.prefix + text)
            self.prefix = ""

    def line(self, text: str) -> None:
        self.flush()
        self.lines.append(text)


def _render(element: HtmlElement, out: _Lines) -> None:
    tag = element.tag if isinstance(element.tag, str) else ""
    if tag == "br":
        out.flush()
    elif tag == "pre":
        out.flush()
        out.prefix = ""  # an item's marker goes on its words, never on its code
        for line in "".join(element.itertext()).strip("\n").splitlines():
            out.lines.append(line.rstrip())
    elif tag == "table" and not element.xpath(".//td//p | .//td//div | .//td//pre | .//td//ul | .//th//p"):
        _render_table(element, out)
    elif tag in _BLOCKS:
        out.flush()
        # An item is marked on its first line, also when its words sit in a <p> (MkDocs', Sphinx's
        # loose lists): unmarked, an item reads as a hard-wrapped line of the paragraph before it.
        simple = not element.xpath("./p | ./div | ./pre | ./ul | ./ol | ./dl")
        if tag == "li" or (tag in ("dt", "dd") and simple):
            out.prefix = "- "
        if element.text:
            out.add(element.text)
        for child in element:
            _render(child, out)
        out.flush()
    else:
        if element.text:
            out.add(element.text)
        for child in element:
            _render(child, out)
    if element.tail:
        out.add(element.tail)


def _render_table(table: HtmlElement, out: _Lines) -> None:
    out.flush()
    for index, row in enumerate(table.iter("tr")):
        cells = [_text_of(cell) for cell in row if cell.tag in ("td", "th")]
        if any(cells):
            out.lines.append("| " + " | ".join(cells) + " | ")
            if index == 0 and row.find("th") is not None:
                out.lines.append("|" + "---|" * len(cells))


def main_text(tree: HtmlElement, *, keep_link_lists: bool = False) -> MainText | None:
    """The main content of a parsed page (the tree is changed), or None when no root stands out."""
    root = find_root(tree)
    if root is None:
        return None
    all_text = _text_of(root)
    link_share = _linked_chars(root) / len(all_text) if all_text else 0.0
    _prune(root, link_lists=not keep_link_lists)
    out = _Lines()
    if root.text:
        out.add(root.text)
    for child in root:
        _render(child, out)
    out.flush()
    return MainText(text="\n".join(out.lines).strip(), link_share=link_share)
