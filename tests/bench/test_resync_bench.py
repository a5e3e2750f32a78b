"""What a re-sync costs, beside the first crawl of the same 77-page site (the Flask docs on 127.0.0.1), in the
same run: requests made, seconds, embedder calls. Two cases: nothing changed on the site; and a quarter of
its pages edited in one paragraph, re-synced with the vectors of unchanged text kept (ingestion/reuse.py)
beside the same re-sync embedding everything again (REINDEX_REUSES_VECTORS off), on two copies of the
source crawled from the same site.

Run in this process with Celery eager (one page after another, as one worker would), with the deployment's
own embedder (MiniLM) under a counting subclass that only counts and calls it. Plain HTTP only: the three
script-built pages the browser strategy would retry are left out of both runs alike.

`make bench` sets GROUNDED_BENCH_RESYNC=full for the whole site; without it (as in `make test`) the sitemap
lists only the pages under 10 KB (25 of them), the same checks at a tenth of the cost.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import UTC, datetime
from functools import cache

import pytest
from django.utils import timezone

from ingestion import lifecycle
from sources.models import Source
from tests.factories import OneStreamMiniLM
from tests.ingestion.conftest import flask_page_paths, flask_url
from tests.ingestion.crawl.servers import FLASK_DOCS, Reply, serving

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]


class CountingMiniLM(OneStreamMiniLM):
    """The deployment's embedder, counting the batches and the texts it is asked to embed."""

    calls = 0
    texts = 0

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        CountingMiniLM.calls += 1
        CountingMiniLM.texts += len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def eager(settings):
    from config.celery import app

    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    settings.EMBEDDERS = {
        "default": {
            **settings.EMBEDDERS["default"],
            "BACKEND": "tests.bench.test_resync_bench.CountingMiniLM",
        }
    }
    settings.CRAWL_STRATEGIES = ("http",)
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


QUICK_PAGE_BYTES = 10_000


@cache
def _site_pages() -> list[str]:
    if os.environ.get("GROUNDED_BENCH_RESYNC") == "full":
        return flask_page_paths()
    return [path for path in flask_page_paths() if (FLASK_DOCS / path).stat().st_size < QUICK_PAGE_BYTES]


def _sitemap(server, with_lastmod: bool) -> str:
    entries = []
    for path in _site_pages():
        modified = datetime.fromtimestamp((FLASK_DOCS / path).stat().st_mtime, tz=UTC).date().isoformat()
        lastmod = f"<lastmod>{modified}</lastmod>" if with_lastmod else ""
        entries.append(f"<url><loc>{flask_url(server, path)}</loc>{lastmod}</url>")
    body = "".join(entries)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'


def _serve_sitemap(server, with_lastmod: bool) -> None:
    server.routes["/sitemap.xml"] = Reply(200, _sitemap(server, with_lastmod), content_type="application/xml")
    server.routes["/robots.txt"] = Reply(
        200, "User-agent: *\nDisallow: /_sources/\n", content_type="text/plain"
    )


def _crawl(server, workspace, agent) -> Source:
    return lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="sitemap",
        title="",
        payload={"url": server.url("/sitemap.xml")},
    )


def _resync(source: Source) -> Source:
    Source.unscoped.filter(id=source.id).update(next_sync_at=timezone.now())
    assert [s.id for s in lifecycle.sync_due_sources()] == [source.id]
    return source


def _measure(server, action) -> dict:
    CountingMiniLM.calls = CountingMiniLM.texts = 0
    requests_before = len(server.requests)
    started = time.perf_counter()
    source = action()
    seconds = time.perf_counter() - started
    source = Source.unscoped.get(id=source.id)
    return {
        "requests": len(server.requests) - requests_before,
        "seconds": round(seconds, 2),
        "embedder_calls": CountingMiniLM.calls,
        "embedded_texts": CountingMiniLM.texts,
        "outcome": {
            k: source.last_sync.get(k) for k in ("added", "changed", "unchanged", "removed", "failed")
        },
    }


@pytest.mark.parametrize("with_lastmod", [False, True], ids=["no-lastmod", "lastmod"])
def test_a_resync_that_finds_nothing_changed_costs_no_embedding(eager, workspace, agent, with_lastmod):
    with serving(root=FLASK_DOCS) as server:
        _serve_sitemap(server, with_lastmod)
        first = _measure(server, lambda: _crawl(server, workspace, agent))
        again = _measure(server, lambda: _resync(Source.unscoped.get(agent_id=agent.id)))
    result = {
        "benchmark": "resync_no_change",
        "site": f"flask-docs ({len(_site_pages())} pages)",
        "sitemap_lastmod": with_lastmod,
        "first_crawl": first,
        "resync": again,
    }
    print(json.dumps(result))
    assert (
        again["embedder_calls"] == 0 and again["outcome"]["changed"] == 0 and again["outcome"]["removed"] == 0
    )
    assert first["embedder_calls"] > 0


EDITED_EVERY = 4  # one page in four


def _edited(path: str) -> str:
    """The page with a paragraph added halfway through its main content, as a docs edit would."""
    html = (FLASK_DOCS / path).read_text(encoding="utf-8")
    main = html.find('role="main"')
    ends = [m.end() for m in re.finditer("</p>", html[main:])] if main >= 0 else []
    if not ends:
        return html
    at = main + ends[len(ends) // 2]
    added = (
        "<p>Changed in version 2.2.6: this behaviour now also applies to blueprints registered more than"
        " once, and the old spelling of the option is deprecated and will be removed in the next release.</p>"
    )
    return html[:at] + added + html[at:]


def test_a_resync_of_edited_pages_embeds_only_their_new_text(
    eager, settings, workspace, agent, other_workspace, other_agent
):
    with serving(root=FLASK_DOCS) as server:
        _serve_sitemap(server, with_lastmod=False)
        firsts = [
            _measure(server, lambda: _crawl(server, workspace, agent)),
            _measure(server, lambda: _crawl(server, other_workspace, other_agent)),
        ]
        edited = _site_pages()[::EDITED_EVERY]
        for path in edited:
            server.routes[flask_url(server, path).removeprefix(server.url("/")[:-1])] = Reply(
                200, _edited(path)
            )
        resyncs = {}
        for reuse, who in ((False, agent), (True, other_agent)):
            settings.REINDEX_REUSES_VECTORS = reuse
            source = Source.unscoped.get(agent_id=who.id)
            resyncs["reuse" if reuse else "embed_all"] = _measure(
                server, lambda source=source: _resync(source)
            )
    result = {
        "benchmark": "resync_edited",
        "site": f"flask-docs ({len(_site_pages())} pages, {len(edited)} edited in one paragraph)",
        "first_crawls": firsts,
        "resync": resyncs,
        "embedded_texts_saved": round(
            1 - resyncs["reuse"]["embedded_texts"] / resyncs["embed_all"]["embedded_texts"], 3
        ),
    }
    print(json.dumps(result))
    assert resyncs["reuse"]["outcome"] == resyncs["embed_all"]["outcome"]
    assert resyncs["reuse"]["outcome"]["changed"] > 0
    assert 0 < resyncs["reuse"]["embedded_texts"] < resyncs["embed_all"]["embedded_texts"]
