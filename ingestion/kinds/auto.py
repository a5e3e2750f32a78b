"""Pages widget visitors land on: added by the widget (agents.services.queue_auto_source), crawled like a
web page, never offered in the "Add source" dialog."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ingestion.kinds.url import UrlKind
from sources.models import Source

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


class AutoKind(UrlKind):
    name = "auto"
    label = "Visited page"
    add_label = None


def visited_page_url(url: str) -> str:
    """The page a visitor landed on, as one source: no fragment, no tracking parameters (the rest keep
    their order, since some sites route by query)."""
    parts = urlsplit(url)
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key.lower() not in TRACKING_PARAMS and not key.lower().startswith(TRACKING_PREFIXES)
    ]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query, doseq=True), ""))


def visited_page_known(*, agent_id: int, url: str) -> bool:
    """Whether the agent already has this visited page (call within the workspace's scope)."""
    return Source.objects.filter(agent_id=agent_id, kind=AutoKind.name, config__url=url).exists()
