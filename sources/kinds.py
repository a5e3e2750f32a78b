"""One validated configuration per source kind.

A kind is registered with the pydantic model that validates what the API accepts for it. Only kinds
whose ingestion is built are registered; anything else is refused as an unknown kind.
"""

from __future__ import annotations

from typing import Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class KindConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class TextConfig(KindConfig):
    content: str

    @field_validator("content")
    @classmethod
    def within_limit(cls, value: str) -> str:
        limit = settings.TEXT_SOURCE_MAX_CHARS
        if len(value) > limit:
            raise ValueError(f"Text is {len(value):,} characters; the limit is {limit:,}.")
        if not value.strip():
            raise ValueError("This is empty: paste the text to add.")
        return value


def _checked_url(value: str) -> str:
    """http(s) only, with a host, and not an address we refuse to fetch. The crawl checks again after
    its own DNS lookup, since a name can point elsewhere later."""
    from ingestion.crawl.addresses import resolve_allowed_addresses
    from ingestion.crawl.errors import BlockedAddressError, FetchError
    from ingestion.crawling import fetch_policy
    from ingestion.safety import check_url

    value = value.strip()
    if len(value) > 2000:
        raise ValueError("Web addresses are at most 2,000 characters.")
    policy = fetch_policy()
    try:
        parsed = check_url(value, policy)
    except FetchError as exc:
        raise ValueError(exc.message) from exc
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        resolve_allowed_addresses(parsed.host, port, policy)
    except BlockedAddressError as exc:
        raise ValueError(exc.message) from exc
    except FetchError:
        pass  # DNS trouble: the crawl reports it, with retries, rather than the form
    return value


class UrlConfig(KindConfig):
    url: str
    # Crawl strategies for this source, in order of preference; settings.CRAWL_STRATEGIES when absent.
    strategies: list[Literal["http", "browser"]] | None = Field(default=None, min_length=1)

    @field_validator("url")
    @classmethod
    def checked(cls, value: str) -> str:
        return _checked_url(value)


class SitemapConfig(UrlConfig):
    """A site root (the sitemap is discovered), a sitemap, or a sitemap index."""

    max_pages: int | None = Field(default=None, ge=1, le=50_000)


class FeedConfig(UrlConfig):
    pass


KINDS: dict[str, type[KindConfig]] = {
    "text": TextConfig,
    "url": UrlConfig,
    "sitemap": SitemapConfig,
    "feed": FeedConfig,
    # Pages widget visitors land on; created by the widget, validated like a URL.
    "auto": UrlConfig,
}
CRAWLED_KINDS = frozenset({"url", "sitemap", "feed", "auto"})


class KindError(ValueError):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


def validate_config(kind: str, payload: dict) -> KindConfig:
    config_class = KINDS.get(kind)
    if config_class is None:
        known = ", ".join(sorted(KINDS))
        raise KindError({"kind": [f"Unknown source kind {kind!r}; known kinds: {known}."]})
    try:
        return config_class.model_validate(payload)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors():
            field_name = ".".join(str(p) for p in error["loc"]) or "non_field_errors"
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "missing":
                message = "This field is required."
            errors.setdefault(field_name, []).append(message)
        raise KindError(errors) from exc
