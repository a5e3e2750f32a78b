"""What a caller sends as a pushed document, checked and turned into the text we index: a title, its
content as text, Markdown or HTML, a link, metadata and audiences (ingestion/push/documents.py stores it).

Refusals are KindError (400, by field) or DocumentTooLarge (413).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ingestion.kinds.config import KindError
from ingestion.parsers.html import main_content_markdown, metadata_title
from retrieval.stores.base import FILTER_KEY

# Keys every chunk's metadata gets from us (ingestion.indexing._build_chunks): a document may not set them.
RESERVED_METADATA = frozenset(
    {"agent_id", "document_id", "chunk_id", "url", "workspace_id", "source_id", "lang", "audience"}
)
MAX_METADATA_KEYS = 50
MAX_METADATA_VALUE_CHARS = 500
MAX_LIST_ITEMS = 100
MAX_AUDIENCES = 50
MAX_EXTERNAL_ID_CHARS = 500
# HTML carries its markup: the raw page may be this many times the text limit; its text must fit the limit.
HTML_MARKUP_ALLOWANCE = 4
CONTENT_FIELDS = ("text", "markdown", "html")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class DocumentTooLarge(Exception):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.errors = {field_name: [message]}


MetadataValue = str | int | float | bool | list[str | int | float | bool]


class PushedDocument(BaseModel):
    """One document as a caller sends it: a title, its content as text, Markdown or HTML, and optionally
    the page to cite, metadata to filter on and the audiences that may retrieve it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    title: str = ""
    text: str | None = None
    markdown: str | None = None
    html: str | None = None
    url: str = ""
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    audiences: list[str] | None = None

    @field_validator("title")
    @classmethod
    def title_fits(cls, value: str) -> str:
        if len(value.strip()) > 500:
            raise ValueError("A title is at most 500 characters.")
        return value.strip()

    @field_validator("url")
    @classmethod
    def web_address(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or len(value) > 2000:
            raise ValueError("The link must be an http(s) address of at most 2,000 characters.")
        return value

    @field_validator("metadata")
    @classmethod
    def filterable(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > MAX_METADATA_KEYS:
            raise ValueError(f"At most {MAX_METADATA_KEYS} metadata keys.")
        for key, item in value.items():
            if not FILTER_KEY.match(key):
                raise ValueError(
                    f"{key!r}: a key is letters, digits and underscores, not starting with a digit."
                )
            if key in RESERVED_METADATA:
                raise ValueError(
                    f"{key!r} is set by Grounded; use another key (audiences go in `audiences`)."
                )
            items = item if isinstance(item, list) else [item]
            if len(items) > MAX_LIST_ITEMS:
                raise ValueError(f"{key!r}: at most {MAX_LIST_ITEMS} values.")
            if any(isinstance(v, str) and len(v) > MAX_METADATA_VALUE_CHARS for v in items):
                raise ValueError(f"{key!r}: values are at most {MAX_METADATA_VALUE_CHARS} characters.")
        return value

    @field_validator("audiences")
    @classmethod
    def some_audience(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        cleaned = list(dict.fromkeys(a.strip() for a in value))
        if not cleaned or any(not a or len(a) > 100 for a in cleaned) or len(cleaned) > MAX_AUDIENCES:
            raise ValueError(
                f"Give 1 to {MAX_AUDIENCES} audiences of 1 to 100 characters, or leave it out for public."
            )
        return cleaned

    @model_validator(mode="after")
    def one_content(self) -> PushedDocument:
        given = [name for name in CONTENT_FIELDS if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("Send the content in exactly one of `text`, `markdown` or `html`.")
        return self


@dataclass(frozen=True)
class Prepared:
    """A validated document, converted to the text we index, with the fingerprint of what it indexes to."""

    external_id: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any]  # what goes into its chunks' metadata, audience included
    fingerprint: str


# --- validating ----------------------------------------------------------------------------------------


def check_external_id(external_id: Any) -> str:
    if not isinstance(external_id, str) or not external_id:
        raise KindError({"external_id": ["Give each document an id of your own (a string)."]})
    if len(external_id) > MAX_EXTERNAL_ID_CHARS:
        raise KindError({"external_id": [f"An id is at most {MAX_EXTERNAL_ID_CHARS} characters."]})
    if external_id != external_id.strip() or _CONTROL.search(external_id):
        raise KindError({"external_id": ["An id has no spaces at either end and no control characters."]})
    return external_id


def prepare(*, external_id: str, payload: Any) -> Prepared:
    """Validate one document and convert it to text. KindError (400) for what to correct, DocumentTooLarge
    (413) for content over TEXT_SOURCE_MAX_CHARS."""
    if not isinstance(payload, dict):
        raise KindError({"non_field_errors": ["A document is a JSON object."]})
    check_external_id(external_id)
    limit = settings.TEXT_SOURCE_MAX_CHARS
    # Checked before validation, so a huge body is refused by its size, not parsed.
    for name in CONTENT_FIELDS:
        raw = payload.get(name)
        allowed = limit * HTML_MARKUP_ALLOWANCE if name == "html" else limit
        if isinstance(raw, str) and len(raw) > allowed:
            raise DocumentTooLarge(name, f"This {name} is {len(raw):,} characters; the limit is {allowed:,}.")
    try:
        document = PushedDocument.model_validate(payload)
    except ValidationError as exc:
        raise KindError(_field_errors(exc)) from exc
    content_field = next(name for name in CONTENT_FIELDS if getattr(document, name) is not None)
    if content_field == "html":
        found_title, text = html_to_text(document.html or "")
    else:
        text = getattr(document, content_field)
        found_title = markdown_title(text) if content_field == "markdown" else ""
    if len(text) > limit:
        message = f"Its text is {len(text):,} characters; the limit is {limit:,}."
        raise DocumentTooLarge(content_field, message)
    if not text.strip():
        raise KindError({content_field: ["This document has no text to index."]})
    title = (document.title or found_title or external_id.rsplit("/", 1)[-1])[:500]
    metadata = {**document.metadata, "audience": document.audiences or ["public"]}
    return Prepared(
        external_id=external_id,
        title=title,
        text=text,
        url=document.url,
        metadata=metadata,
        fingerprint=fingerprint(title=title, text=text, url=document.url, metadata=metadata),
    )


def fingerprint(*, title: str, text: str, url: str, metadata: dict[str, Any]) -> str:
    """Everything a document's chunks are made of: the title is embedded with each chunk, the link and
    metadata are stored with it. The same fingerprint means nothing to store and nothing to embed."""
    body = json.dumps({"title": title, "text": text, "url": url, "metadata": metadata}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _field_errors(exc: ValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        location = [str(p) for p in error["loc"]]
        # A type error inside `metadata` names the value's position; the key is what people need.
        name = ".".join(location[:2]) if location else "non_field_errors"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "Unknown field."
        errors.setdefault(name or "non_field_errors", []).append(message)
    return errors


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document. trafilatura, as the crawler and the HTML parser use it, keeps the
    main content as Markdown; the crawler's page checks (not-found pages, bot walls) are for pages we fetch,
    not for what a customer sends, so they are not applied. All visible text when trafilatura finds none.
    The title is the document's <title> (README); trafilatura's guess (og:title, a lone <h1>) only when it
    has none."""
    import lxml.html
    from lxml_html_clean import Cleaner

    title = html_title(html)
    text = main_content_markdown(html)
    if not title:
        title = metadata_title(html)
    if not text or not text.strip():
        try:
            tree = Cleaner(scripts=True, javascript=True, style=True, comments=True).clean_html(
                lxml.html.document_fromstring(html)
            )
            text = re.sub(r"\n{3,}", "\n\n", tree.text_content()).strip()
        except (ValueError, lxml.etree.ParserError):
            text = ""
    return title, text or ""


def html_title(html: str) -> str:
    """The text of the document's <title> in its head (not an SVG's), whitespace folded; "" without one."""
    from trafilatura import load_html

    tree = load_html(html)
    title = tree.findtext("head/title") if tree is not None else None
    return " ".join((title or "").split())[:500]


def markdown_title(text: str) -> str:
    heading = _MARKDOWN_HEADING.search(text[:5000])
    return heading.group(1).strip() if heading else ""
