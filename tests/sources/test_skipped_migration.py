"""Migration 0018: pages that failed as "dropped" for a reason that is now a skip become skipped, with that
reason, and their sources' counters follow (a source that failed only for them is done)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("sources", "0017_api_key_change_notices")]
AFTER = [("sources", "0018_skipped_pages")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_pages_dropped_as_short_become_skipped(workspace, agent):
    old = migrate(BEFORE)
    sources, documents = old.get_model("sources", "Source"), old.get_model("sources", "Document")
    owned = {"workspace_id": workspace.id, "agent_id": agent.id}
    mixed = sources.objects.create(**owned, kind="sitemap", title="site", status="done")
    short = sources.objects.create(**owned, kind="url", title="p", status="failed")
    pages = [
        (mixed, "done", "", ""),
        (mixed, "failed", "dropped", "dropped: too_short\n[request_id=abc]"),
        (mixed, "failed", "dropped", "dropped: link_list"),
        (mixed, "failed", "dropped", "dropped: bot_wall"),  # could not be read: still a failure
        (mixed, "failed", "timeout", "time limit of 90s"),
        (short, "failed", "dropped", "dropped: too_short"),
    ]
    for i, (source, status, failure, detail) in enumerate(pages):
        documents.objects.create(
            workspace_id=workspace.id,
            source=source,
            url=f"https://a.test/{i}",
            status=status,
            failure_class=failure,
            error_detail=detail,
        )
    new = migrate(AFTER)
    documents = new.get_model("sources", "Document").objects
    skipped = dict(documents.filter(status="skipped").values_list("url", "skip_reason"))
    assert skipped == {
        "https://a.test/1": "too_short",
        "https://a.test/2": "link_list",
        "https://a.test/5": "too_short",
    }
    assert documents.get(url="https://a.test/3").status == "failed"
    mixed = new.get_model("sources", "Source").objects.get(id=mixed.id)
    assert (mixed.status, mixed.pages_done, mixed.pages_failed, mixed.pages_skipped) == ("done", 1, 2, 2)
    assert mixed.pages_skipped_by_reason == {"too_short": 1, "link_list": 1}
    short = new.get_model("sources", "Source").objects.get(id=short.id)
    assert (short.status, short.pages_skipped, short.pages_failed) == ("done", 1, 0)
    back = migrate(BEFORE).get_model("sources", "Document").objects
    assert back.filter(status="failed", failure_class="dropped").count() == 4
    executor = MigrationExecutor(connection)
    migrate(executor.loader.graph.leaf_nodes())
