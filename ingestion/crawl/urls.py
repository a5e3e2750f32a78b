"""One spelling per page, so the same page found through a sitemap, a feed and a link is kept once."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit, urlunsplit

DEFAULT_PORTS = {"http": 80, "https": 443}

# Parameters ad and mail platforms add to a link: they say how the visitor came, not which page it is.
# Left in, every campaign click on the same page would queue (and crawl, and embed) another copy.
TRACKING_PARAMS = frozenset(
    {
        "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid", "twclid", "ttclid",
        "li_fat_id", "igshid", "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok", "vero_id",
        "oly_anon_id", "oly_enc_id", "rb_clickid", "s_cid", "ref_src",
    }
)  # fmt: skip
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "hsa_")


def is_tracking_param(key: str) -> bool:
    """Whether a query parameter only says how a visitor came (a campaign, a click), not which page it is."""
    lowered = key.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(TRACKING_PREFIXES)


def normalize_url(url: str, base_url: str | None = None) -> str | None:
    """Absolute http(s) URL with scheme and host in lower case, no default port, no fragment, and "/" for an
    empty path; None when `url` is not a web address. Relative URLs are resolved against `base_url`."""
    url = url.strip()
    if not url:
        return None
    if base_url:
        url = urljoin(base_url, url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    if parts.username or parts.password:
        credentials = parts.username or ""
        if parts.password:
            credentials += f":{parts.password}"
        netloc = f"{credentials}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def site_root(url_or_domain: str) -> str:
    """The root URL of a site given as "example.com", "https://example.com/some/page" or "127.0.0.1:8000"."""
    value = url_or_domain.strip()
    if "://" not in value:
        value = f"https://{value}"
    normalized = normalize_url(value)
    if normalized is None:
        raise ValueError(f"not a web address: {url_or_domain!r}")
    parts = urlsplit(normalized)
    return urlunsplit((parts.scheme, parts.netloc, "/", "", ""))


def same_origin(url_a: str, url_b: str) -> bool:
    a, b = urlsplit(normalize_url(url_a) or ""), urlsplit(normalize_url(url_b) or "")
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)
