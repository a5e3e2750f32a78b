"""A connector's sync stops at the plan's documents quota like a crawl's fan-out (ingestion.admission): new
documents past it are left out with a notice on the source, never silently, and a source with no room at
all fails with the reason and stores nothing. Against the fake Notion and Google APIs over real HTTP."""

from __future__ import annotations

import pytest

from ingestion import lifecycle
from sources import metering
from sources.models import Document, Plan, Source, Status
from sources.plans import assign_plan
from sources.tenancy import workspace_scope
from tests.integrations.notion_pages import build_workspace
from tests.integrations.test_notion_sync import resync, run_sync

pytestmark = pytest.mark.django_db


def _plan(workspace, **limits) -> Plan:
    plan = Plan.objects.create(name="small", **limits)
    assign_plan(workspace, "small")
    return plan


def _source(workspace, source: Source) -> Source:
    with workspace_scope(workspace.id):
        return Source.objects.get(id=source.id)


def test_a_notion_sync_stops_at_the_documents_quota_with_a_notice(
    workspace, agent, notion_connection, notion
):
    pages = build_workspace(notion)
    plan = _plan(workspace, max_documents=3)
    items = [{"id": pages["handbook"], "type": "page"}, {"id": pages["faq"], "type": "database"}]
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="notion",
        title="",
        payload={"connection": notion_connection.id, "items": items, "include_children": True},
    )
    run_sync(source)
    source = _source(workspace, source)
    with workspace_scope(workspace.id):
        assert Document.objects.filter(source_id=source.id).count() == 3
    # The handbook lists five documents (see test_notion_sync): two were left out, and the source says so.
    assert source.status == Status.DONE and source.pages_total == 3, (source.error, source.error_detail)
    assert "limit of 3 pages and documents: 2 listed pages not added" in source.notice
    assert source.state["quota_stopped"] == {"documents": 2} and len(source.state["objects"]) == 3
    assert metering.used(workspace_id=workspace.id, metric="crawl_pages") == 0  # provider calls, not crawls

    # A larger plan: the next sync adds what was left out, and the notice goes.
    Plan.objects.filter(id=plan.id).update(max_documents=10)
    resync(source)
    source = _source(workspace, source)
    with workspace_scope(workspace.id):
        assert Document.objects.filter(source_id=source.id, status=Status.DONE).count() == 5
    assert source.notice == "" and source.state["quota_stopped"] == {} and source.pages_total == 5


def test_a_google_source_with_no_room_left_fails_with_the_reason_and_stores_nothing(
    workspace, agent, google_connection, google
):
    folder = google.add_folder("Support")
    for title in ("Returns", "Shipping", "Kettle care"):
        google.add_doc(title, f"{title}: what customers ask about most.", folder=folder)
    loose = google.add_doc("Plant rota", "Water the ficus on Fridays.")
    _plan(workspace, max_documents=1)

    def create(items):
        return lifecycle.source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind="gdoc",
            title="",
            payload={"connection": google_connection.id, "items": items},
        )

    # Both are created while the workspace holds no document; the first sync takes the only one.
    first, second = create([{"id": loose}]), create([{"id": folder, "type": "folder"}])
    run_sync(first)
    assert _source(workspace, first).status == Status.DONE
    outcome, indexed = run_sync(second)
    second = _source(workspace, second)
    assert outcome.document_ids == () and indexed == []
    assert second.status == Status.FAILED
    assert "limit of 1 pages and documents: 3 listed pages not added" in second.error
    assert "plan quota" in second.error_detail
    with workspace_scope(workspace.id):
        assert not Document.objects.filter(source_id=second.id).exists()
        assert Document.objects.count() == 1
    assert metering.used(workspace_id=workspace.id, metric="crawl_pages") == 0
