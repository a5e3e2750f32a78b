"""Builders the tests share: people, indexed text, polling. Imported by tests and by conftest.py (which
only holds fixtures)."""

from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from retrieval.embedders.local import MiniLMOnnxEmbedder

ROOT = Path(__file__).resolve().parent.parent
# Real third-party data, outside the repository (GROUNDED_SHARED_DATA points elsewhere, e.g. from a worktree).
SHARED_DATA = Path(os.environ.get("GROUNDED_SHARED_DATA") or ROOT.parent / "shared" / "data")


def make_member(workspace, username: str, role: str):
    from django.contrib.auth import get_user_model

    from sources.models import Membership
    from sources.tenancy import workspace_scope

    user = get_user_model().objects.create_user(username, f"{username}@example.com", "pw-for-tests-123")
    with workspace_scope(workspace.id):
        Membership.objects.create(user=user, role=role)
    return user


def check_deferred_constraints() -> None:
    """The test's rows are in an open transaction whose foreign keys are checked at commit; PostgreSQL
    will not build an index on a table with such checks pending (a real build runs on its own)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


SKIPPED_MESSAGE = "This page has too little text to be useful, so we skipped it."


def make_skipped_site(workspace, agent, *, title: str, config: dict, short_chars: int, detail: bool):
    """A crawled site with 2 indexed pages, 3 skipped (2 too short, 1 a list of links) and 1 failed; the
    second short page holds `short_chars` characters, and `detail` gives each skipped page an error_detail."""
    from sources.models import Document, Source
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent,
            kind="sitemap",
            title=title,
            config=config,
            status="done",
            pages_total=6,
            pages_done=2,
            pages_failed=1,
            pages_skipped=3,
            pages_skipped_by_reason={"too_short": 2, "link_list": 1},
        )
        for i in range(2):
            Document.objects.create(source=source, url=f"http://docs.test/ok/{i}", status="done", text="fine")
        for i, (reason, chars) in enumerate(
            [("too_short", 42), ("too_short", short_chars), ("link_list", 900)]
        ):
            url = f"http://docs.test/short/{i}"
            Document.objects.create(
                source=source,
                url=url,
                status="skipped",
                skip_reason=reason,
                skipped_chars=chars,
                error=SKIPPED_MESSAGE,
                error_detail=f"{url}: {chars} characters" if detail else "",
            )
        Document.objects.create(
            source=source,
            url="http://docs.test/gone",
            status="failed",
            failure_class="not_found",
            error="This page doesn't exist.",
        )
    return source


def skipped_page(source, i: int = 0):
    from sources.models import Document

    return Document.unscoped.get(source_id=source.id, url=f"http://docs.test/short/{i}")


def wait_for(predicate, *, timeout: float = 60.0, interval: float = 0.2):
    """Poll until predicate() returns something truthy; fail the test with the last value otherwise."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"condition not met within {timeout} s (last value: {value!r})")


def index_text(workspace, agent, title: str, content: str):
    """Create a text source and index it in this process (the worker path is tested on its own)."""
    from ingestion.indexing import source_index
    from ingestion.kinds.text import TextKind
    from ingestion.lifecycle import source_create
    from sources.models import Source
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        source = source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind=TextKind.name,
            title=title,
            payload={"content": content},
        )
        source_index(source=source)
        return Source.objects.get(id=source.id)


@contextmanager
def pysbd_on_plain_re():
    """pysbd's modules on the real `re` inside, as pysbd ships (ingestion.text.pysbd_patterns gives them its
    stand-in): the baseline the kept patterns are compared with."""
    from ingestion.text import pysbd_patterns

    users = [m for m in list(sys.modules.values()) if getattr(m, "re", None) is pysbd_patterns.RE]
    for module in users:
        module.re = re
    try:
        yield
    finally:
        for module in users:
            module.re = pysbd_patterns.RE


@contextmanager
def pysbds_own_abbreviation_pass():
    """The segmenter with pysbd's English abbreviation pass (ingestion.text.pysbd_abbreviations gives it a
    faster one): what the faster pass is compared with."""
    from pysbd.lang.english import English

    from ingestion.text import segment

    made = segment._segmenter()
    original, made.language_module = made.language_module, English
    try:
        yield
    finally:
        made.language_module = original


@contextmanager
def every_paragraph_through_pysbd():
    """`segment.sentences` without its one-sentence shortcut (`segment.one_sentence`): every paragraph goes
    to pysbd, as before the shortcut; what the shortcut is compared with."""
    from ingestion.text import segment

    original, segment.one_sentence = segment.one_sentence, lambda _text: False
    try:
        yield
    finally:
        segment.one_sentence = original


class OneStreamMiniLM(MiniLMOnnxEmbedder):
    """The built-in embedder running one batch at a time, so every part an index job embeds goes through
    embed_documents, where a test's subclass counts, records or fails it. With several streams a job's
    parts are queued at once without it (tests/retrieval/embedders/test_local.py tests that path)."""

    def __init__(self, **options: object) -> None:
        super().__init__(**{**options, "streams": 1})
