"""Notion blocks and properties -> clean text with its structure kept (headings, lists, tables as rows).

Pure functions: `children(block_id)` is how nested blocks are read (the client's paginated walk in
production, a dict in tests). Images, files, videos and PDFs are skipped; their captions are kept.
Child pages and databases are named in the text (and become their own documents when children are
included, see integrations/notion/kind.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Block = dict[str, Any]
Children = Callable[[str], list[Block]]

# Blocks whose content is a file; only the caption is text.
MEDIA = {"image", "file", "pdf", "video", "audio"}
HEADINGS = {"heading_1": "# ", "heading_2": "## ", "heading_3": "### "}
MAX_DEPTH = 12  # Notion nests at most a few levels in practice; this stops a malformed cycle.


def rich_text(parts: list[dict[str, Any]] | None) -> str:
    """Plain text of a rich-text array; link mentions and links keep their address, equations their TeX."""
    out = []
    for part in parts or []:
        kind = part.get("type")
        text = part.get("plain_text")
        if kind == "equation":
            text = part.get("equation", {}).get("expression", text or "")
        elif kind == "mention":
            mention = part.get("mention", {})
            href = part.get("href") or mention.get("link_mention", {}).get("href")
            if mention.get("type") == "link_mention" and href:
                title = mention.get("link_mention", {}).get("title") or text or href
                text = f"{title} ({href})" if title != href else href
        if text is None:
            text = part.get("text", {}).get("content", "")
        out.append(text)
    return "".join(out)


def render_blocks(block_id: str, children: Children, *, depth: int = 0) -> list[str]:
    """The lines of a page or block's children, nested blocks indented under their parent."""
    lines: list[str] = []
    number = 0
    for block in children(block_id):
        kind = block.get("type", "")
        number = number + 1 if kind == "numbered_list_item" else 0
        lines.extend(_block(block, children, depth=depth, number=number))
    return lines


def _indent(lines: list[str], prefix: str = "  ") -> list[str]:
    return [prefix + line if line else line for line in lines]


def _nested(block: Block, children: Children, depth: int) -> list[str]:
    if not block.get("has_children") or depth >= MAX_DEPTH:
        return []
    return render_blocks(block["id"], children, depth=depth + 1)


def _block(block: Block, children: Children, *, depth: int, number: int) -> list[str]:
    kind = block.get("type", "")
    body = block.get(kind) or {}
    text = rich_text(body.get("rich_text"))
    if kind in HEADINGS:
        # A toggleable heading holds its section as children.
        return ["", HEADINGS[kind] + text, *_nested(block, children, depth)]
    if kind == "paragraph":
        return (
            [text, *_indent(_nested(block, children, depth))] if text or block.get("has_children") else [""]
        )
    if kind == "bulleted_list_item":
        return [f"- {text}", *_indent(_nested(block, children, depth))]
    if kind == "numbered_list_item":
        return [f"{number}. {text}", *_indent(_nested(block, children, depth))]
    if kind == "to_do":
        mark = "x" if body.get("checked") else " "
        return [f"- [{mark}] {text}", *_indent(_nested(block, children, depth))]
    if kind == "toggle":
        return [text, *_indent(_nested(block, children, depth))]
    if kind == "quote":
        return [f"> {line}" for line in [text, *_nested(block, children, depth)]]
    if kind == "callout":
        icon = (body.get("icon") or {}).get("emoji", "")
        return [f"{icon} {text}".strip(), *_indent(_nested(block, children, depth))]
    if kind == "code":
        caption = rich_text(body.get("caption"))
        return [f"```{body.get('language', '')}", text, "```", *([caption] if caption else [])]
    if kind == "equation":
        return [body.get("expression", "")]
    if kind == "table":
        return _table(block, children, depth)
    if kind == "child_page":
        return ["", f"Page: {body.get('title', '')}"]
    if kind == "child_database":
        return ["", f"Database: {body.get('title', '')}"]
    if kind == "synced_block":
        # A copy's content lives under the original block; the original's under itself.
        original = (body.get("synced_from") or {}).get("block_id")
        if original and depth < MAX_DEPTH:
            return render_blocks(original, children, depth=depth + 1)
        return _nested(block, children, depth)
    if kind in ("column_list", "column"):
        return _nested(block, children, depth)
    if kind in ("bookmark", "embed", "link_preview"):
        caption = rich_text(body.get("caption"))
        url = body.get("url", "")
        return [f"{caption} ({url})" if caption else url]
    if kind in MEDIA:
        caption = rich_text(body.get("caption"))
        return [caption] if caption else []
    # divider, table_of_contents, breadcrumb, unsupported: nothing to read.
    return []


def _table(block: Block, children: Children, depth: int) -> list[str]:
    """Rows as `header: value` pairs when the table has a header row (a row read alone still makes
    sense), as ` | `-joined cells otherwise."""
    rows = [
        [rich_text(cell) for cell in row.get("table_row", {}).get("cells", [])]
        for row in (children(block["id"]) if block.get("has_children") else [])
        if row.get("type") == "table_row"
    ]
    if not rows:
        return []
    header = rows[0] if block.get("table", {}).get("has_column_header") else None
    lines = [""]
    if header:
        lines.append(" | ".join(header))
        for row in rows[1:]:
            lines.append("; ".join(f"{h}: {c}" if h else c for h, c in zip(header, row, strict=False)))
    else:
        lines.extend(" | ".join(row) for row in rows)
    lines.append("")
    return lines


# --- pages and database rows ----------------------------------------------------------------------------


def property_value(prop: dict[str, Any]) -> str:
    """One database property's value as text (people by name, relations by count, dates as start to end)."""
    kind = prop.get("type", "")
    value = prop.get(kind)
    if value is None:
        return ""
    if kind in ("title", "rich_text"):
        return rich_text(value)
    if kind in ("select", "status"):
        return value.get("name", "")
    if kind == "multi_select":
        return ", ".join(option.get("name", "") for option in value)
    if kind == "date":
        return " to ".join(filter(None, [value.get("start"), value.get("end")]))
    if kind == "checkbox":
        return "yes" if value else "no"
    if kind == "people":
        return ", ".join(p.get("name") or p.get("person", {}).get("email", "") for p in value)
    if kind == "formula":
        return str(value.get(value.get("type", ""), "") or "")
    if kind == "relation":
        return f"{len(value)} linked" if value else ""
    if kind == "unique_id":
        return f"{value.get('prefix') or ''}{'-' if value.get('prefix') else ''}{value.get('number', '')}"
    if kind == "files":
        return ", ".join(f.get("name", "") for f in value)
    if kind == "rollup":
        return str(value.get(value.get("type", ""), "") or "")
    if isinstance(value, (str, int, float)):
        return str(value)  # number, url, email, phone_number, created_time, last_edited_time
    return ""


def page_title(page: dict[str, Any]) -> str:
    if page.get("object") == "database":
        # A database's `properties` are its schema; its title is its own.
        return rich_text(page.get("title")).strip()
    for prop in (page.get("properties") or {}).values():
        if prop.get("type") == "title":
            return rich_text(prop.get("title")).strip()
    return ""


def properties_lines(page: dict[str, Any]) -> list[str]:
    """A database row's properties as `name: value` lines (the title is the document's title instead)."""
    lines = []
    for name, prop in (page.get("properties") or {}).items():
        if prop.get("type") == "title":
            continue
        value = property_value(prop).strip()
        if value:
            lines.append(f"{name}: {value}")
    return lines


def page_text(page: dict[str, Any], children: Children) -> str:
    """A page's document text: its title, a row's properties, then its blocks."""
    lines = [page_title(page)]
    if (page.get("parent") or {}).get("type") == "database_id":
        lines.extend(properties_lines(page))
    lines.append("")
    lines.extend(render_blocks(page["id"], children))
    return tidy(lines)


def tidy(lines: list[str]) -> str:
    """Join lines, trim trailing spaces and squeeze runs of blank lines into one."""
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return "\n".join(out).strip()
