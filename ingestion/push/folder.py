"""A folder of documents as pushed documents (`manage.py ingest`): which files, their frontmatter, their text
and the link each cites. Reads only; ingestion/push/documents.py writes.

Markdown (.md, .markdown, .mdx) and .txt are read as text: YAML frontmatter gives `title`, `url`,
`audiences` and metadata (every other key, `type` included); MDX loses its import/export lines and JSX
component tags. Every other type the upload parsers read (PDF, Word, Excel, OpenDocument, CSV, HTML) is
parsed as an upload is, in an isolated process with the same limits. A document's id is its path relative
to the folder, with forward slashes.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml
from django.conf import settings

from ingestion.parsers.base import ParseError
from ingestion.parsers.text import decode_text
from ingestion.push.inputs import RESERVED_METADATA
from retrieval.stores.base import FILTER_KEY

MARKDOWN = {".md", ".markdown", ".mdx"}
TEXT = {".txt"}
# What the upload dialog accepts besides Markdown and text (templates/app/_add_source_dialog.html).
PARSED = {".pdf", ".docx", ".doc", ".xlsx", ".xls", ".odt", ".ods", ".csv", ".tsv", ".html", ".htm"}
SUPPORTED = MARKDOWN | TEXT | PARSED
SKIPPED_FOLDERS = {"node_modules", "__pycache__"}
# Pages built from these files drop the extension in their address, and an index page is its folder's.
PAGE_SUFFIXES = MARKDOWN | {".html", ".htm"}
INDEX_NAMES = {"index", "readme", "_index"}

_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_MDX_STATEMENT = re.compile(r"^(import|export)\s")
_JSX_TAG = re.compile(r"</?[A-Z][\w.]*(\s[^<>]*)?/?>")


class FolderFileError(Exception):
    """A file that cannot be pushed; the message is for the person running the command."""


@dataclass
class FolderDocument:
    """One file read as a pushed document's payload (the documents API's shape), with what was skipped."""

    external_id: str
    payload: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def walk(root: Path) -> list[Path]:
    """Every supported file under root, in path order; hidden files and folders and node_modules skipped."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in relative.parts):
            continue
        if path.is_file() and path.suffix.lower() in SUPPORTED:
            found.append(path)
    return found


def external_id_of(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def citation_url(external_id: str, base_url: str) -> str:
    """base_url + the file's path, as a docs site serves it: `guides/install.md` is `guides/install`, an
    index or README is its folder, other files keep their name."""
    if not base_url:
        return ""
    path = Path(external_id)
    if path.suffix.lower() in PAGE_SUFFIXES:
        path = path.with_suffix("")
        if path.name.lower() in INDEX_NAMES:
            parent = path.parent.as_posix()
            return base_url.rstrip("/") + "/" + ("" if parent == "." else quote(parent) + "/")
    return base_url.rstrip("/") + "/" + quote(path.as_posix())


def read_document(root: Path, path: Path, *, base_url: str = "") -> FolderDocument:
    """The file as a document payload; FolderFileError when it can't be read."""
    external_id = external_id_of(root, path)
    size = path.stat().st_size
    if size > settings.UPLOAD_MAX_FILE_BYTES:
        raise FolderFileError(f"{size:,} bytes; the limit per file is {settings.UPLOAD_MAX_FILE_BYTES:,}.")
    suffix = path.suffix.lower()
    document = FolderDocument(external_id=external_id, payload={})
    if suffix in MARKDOWN or suffix in TEXT:
        text, _encoding = decode_text(path.read_bytes())
        front: dict[str, Any] = {}
        if suffix in MARKDOWN:
            front, text = split_frontmatter(text)
            if suffix == ".mdx":
                text = clean_mdx(text)
        document.payload = {("markdown" if suffix in MARKDOWN else "text"): text}
        _apply_frontmatter(document, front)
    elif suffix in {".html", ".htm"}:
        # Converted by the documents service, which also takes the page's own title.
        document.payload = {"html": decode_text(path.read_bytes())[0]}
    else:
        document.payload = {"text": _parsed_text(path), "title": path.name}
    document.payload.setdefault("url", citation_url(external_id, base_url))
    if not document.payload["url"]:
        document.payload.pop("url")
    return document


def _parsed_text(path: Path) -> str:
    from ingestion.parsers.isolation import parse_file_isolated

    try:
        segments = parse_file_isolated(
            path,
            path.name,
            timeout_s=settings.UPLOAD_PARSE_TIMEOUT,
            memory_mb=settings.UPLOAD_PARSE_MEMORY_MB,
        )
    except ParseError as exc:
        raise FolderFileError(exc.message) from exc
    # Spreadsheet rows are records, one a line; pages and sections are paragraphs apart.
    joiner = "\n" if segments and all("row" in s.meta for s in segments) else "\n\n"
    return joiner.join(s.text for s in segments if s.text.strip())


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a Markdown file; YAML that isn't a mapping is an error, not ignored."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return {}, text.lstrip("\ufeff")
    try:
        front = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise FolderFileError(f"The frontmatter is not valid YAML: {exc}".splitlines()[0]) from exc
    if not isinstance(front, dict):
        raise FolderFileError("The frontmatter must be a mapping of keys to values.")
    return front, text[match.end() :]


def clean_mdx(text: str) -> str:
    """MDX's code is not content: import/export lines go, and JSX component tags (capitalised) lose their
    markup but keep the text between them. Code fences are left as they are."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            if _MDX_STATEMENT.match(line):
                continue
            line = _JSX_TAG.sub("", line)
        lines.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def _apply_frontmatter(document: FolderDocument, front: dict[str, Any]) -> None:
    for raw_key, value in front.items():
        key = str(raw_key).strip().replace("-", "_")
        if value is None:
            continue
        if key == "title":
            document.payload["title"] = str(value)
        elif key == "url":
            document.payload["url"] = str(value)
        elif key in ("audiences", "audience"):
            document.payload["audiences"] = [str(a) for a in (value if isinstance(value, list) else [value])]
        elif not FILTER_KEY.match(key) or key in RESERVED_METADATA:
            document.warnings.append(f"frontmatter key {raw_key!r} skipped: it can't be a metadata key")
        else:
            converted = _metadata_value(value)
            if converted is None:
                document.warnings.append(
                    f"frontmatter key {raw_key!r} skipped: metadata values are text, numbers, "
                    "true/false or lists of them"
                )
            else:
                document.payload.setdefault("metadata", {})[key] = converted


def _metadata_value(value: Any) -> Any:
    if isinstance(value, datetime.date):  # YAML reads `date: 2024-05-01` as a date
        return value.isoformat()
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list):
        items = [_metadata_value(v) for v in value]
        if all(item is not None and not isinstance(item, list) for item in items):
            return items
    return None
