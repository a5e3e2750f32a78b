"""Which links a link-following crawl may queue: the scope an admin sets (host, path prefix, include and
exclude globs, depth, pages) and the guards against crawler traps. Pure functions: the caller keeps what it
has seen.

Every refusal is a reason string (`out_of_scope`, `excluded`, `not_included`, `too_deep`, `too_many_pages`,
`trap_long_url`, `trap_repeated_segments`, `trap_query_variants`), so a walk can count its skips by reason."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ingestion.crawl.urls import is_tracking_param, normalize_url

# A directory's index page is the directory itself.
INDEX_PAGES = ("index.html", "index.htm")
# Browsers and servers handle far longer URLs, but a page address this long is almost always generated.
DEFAULT_MAX_URL_LENGTH = 2000
# How often one path segment (or a run of segments) may come back before the path is taken for a loop.
DEFAULT_MAX_SEGMENT_REPEATS = 2
# Distinct queries of one path (calendars, sorts, session ids) before more of them are taken for a trap.
DEFAULT_MAX_QUERY_VARIANTS = 20


@dataclass(frozen=True)
class Scope:
    """What a link-following crawl may reach from its start URLs."""

    start_urls: tuple[str, ...]
    include_subdomains: bool = False
    path_prefix: str = ""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int = 5
    max_pages: int = 500
    max_url_length: int = DEFAULT_MAX_URL_LENGTH
    max_segment_repeats: int = DEFAULT_MAX_SEGMENT_REPEATS
    max_query_variants: int = DEFAULT_MAX_QUERY_VARIANTS

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset(urlsplit(url).hostname or "" for url in self.start_urls) - {""}


def canonical_url(url: str, base_url: str | None = None) -> str | None:
    """One spelling per page: `normalize_url` (lower-case scheme and host, no default port, no fragment), then
    `index.html` and a trailing slash folded into the directory, tracking parameters dropped and the others
    sorted. None when `url` is not a web address."""
    normalized = normalize_url(url, base_url)
    if normalized is None:
        return None
    parts = urlsplit(normalized)
    path = parts.path
    head, _, last = path.rpartition("/")
    if last.lower() in INDEX_PAGES:
        path = head + "/"
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    query = sorted(
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if not is_tracking_param(key)
    )
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))


def path_and_query(url: str) -> str:
    """What include and exclude globs are matched against: `/docs/page?lang=en`, or the path alone."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def matches_any(globs: Sequence[str], url: str) -> bool:
    target = path_and_query(url)
    return any(fnmatchcase(target, glob) for glob in globs)


def in_host_scope(scope: Scope, url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host in scope.hosts:
        return True
    if not scope.include_subdomains:
        return False
    return any(
        host.endswith("." + base.removeprefix("www.")) or host == base.removeprefix("www.")
        for base in scope.hosts
    )


def repeats_segments(path: str, max_repeats: int) -> bool:
    """Whether a path loops: one segment more than `max_repeats` times, or a run of two or more segments
    followed at once by itself (`/a/b/a/b`), as relative links on a misconfigured server produce."""
    segments = [segment for segment in path.split("/") if segment]
    if any(segments.count(segment) > max_repeats for segment in set(segments)):
        return True
    for size in range(2, len(segments) // 2 + 1):
        for start in range(len(segments) - 2 * size + 1):
            if segments[start : start + size] == segments[start + size : start + 2 * size]:
                return True
    return False


def refusal(scope: Scope, url: str, *, depth: int) -> str | None:
    """Why `url` (canonical), found `depth` links from a start URL, may not be queued; None when it may.
    Checks what the URL alone decides; `query_variant_refusal` and `page_cap_refusal` need what the walk
    saw."""
    if len(url) > scope.max_url_length:
        return "trap_long_url"
    if not in_host_scope(scope, url):
        return "out_of_scope"
    path = urlsplit(url).path
    prefix = "/" + scope.path_prefix.strip("/")
    if prefix != "/" and path != prefix and not path.startswith(prefix + "/"):
        return "out_of_scope"
    if matches_any(scope.exclude, url):
        return "excluded"
    if scope.include and not matches_any(scope.include, url):
        return "not_included"
    if depth > scope.max_depth:
        return "too_deep"
    if repeats_segments(path, scope.max_segment_repeats):
        return "trap_repeated_segments"
    return None


def path_key(url: str) -> str:
    """The page address without its query: what query variants are counted against."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def query_variant_refusal(scope: Scope, url: str, known_queries: Collection[str]) -> str | None:
    """`trap_query_variants` when `url`'s path already has `max_query_variants` distinct queries queued
    (`known_queries`, the queries of the URLs with the same `path_key`) and this query is a new one."""
    query = urlsplit(url).query
    if not query or query in known_queries:
        return None
    if len(set(known_queries) - {""}) >= scope.max_query_variants:
        return "trap_query_variants"
    return None


def page_cap_refusal(scope: Scope, pages_queued: int) -> str | None:
    return "too_many_pages" if pages_queued >= scope.max_pages else None
