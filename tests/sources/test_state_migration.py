"""Migration 0007: what ingestion kept inside Source.config moves to Source.state, and back on reverse."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [
    ("sources", "0006_chunk_metadata_gin"),
    ("agents", "0003_agent_auto_sources_agent_context_budget_and_more"),
]
AFTER = [("sources", "0007_source_state")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_runtime_keys_move_from_config_to_state_and_back():
    old = migrate(BEFORE)
    workspace = old.get_model("sources", "Workspace").objects.create(name="W", slug="w-migration")
    agent = old.get_model("agents", "Agent").objects.create(workspace=workspace, name="A")
    source_model = old.get_model("sources", "Source")
    upload = source_model.objects.create(
        workspace=workspace,
        agent=agent,
        kind="upload",
        title="f.pdf",
        config={"filename": "f.pdf", "size": 10, "storage_path": "uploads/1/1/original.pdf", "parsed": True},
    )
    page = source_model.objects.create(
        workspace=workspace, agent=agent, kind="url", title="p", config={"url": "https://example.com/"}
    )
    new = migrate(AFTER)
    moved = new.get_model("sources", "Source").objects.get(id=upload.id)
    assert moved.config == {"filename": "f.pdf"}
    assert moved.state == {"size": 10, "storage_path": "uploads/1/1/original.pdf", "parsed": True}
    untouched = new.get_model("sources", "Source").objects.get(id=page.id)
    assert untouched.config == {"url": "https://example.com/"} and untouched.state == {}
    back = migrate(BEFORE).get_model("sources", "Source").objects.get(id=upload.id)
    assert back.config["storage_path"] == "uploads/1/1/original.pdf" and back.config["filename"] == "f.pdf"
    executor = MigrationExecutor(connection)
    migrate(executor.loader.graph.leaf_nodes())
