"""Per-source chunking in the admin UI: the add dialog and the settings page set chunk size, overlap and a
record separator; Preview shows the passages they make (of the source's own text or pasted text) before
anything is saved, exactly as indexing then cuts them; saving indexes the source again."""

from __future__ import annotations

import json

import pytest

from ingestion.indexing import source_index
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db

FAQ = "\n---\n".join(
    [
        f"Q: Question number {i}?\nA: " + f"The answer to question {i} is written out here. " * 4
        for i in range(12)
    ]
    + ["   "]  # an empty record, dropped
)


def settings_url(source) -> str:
    return f"/app/sources/{source.id}/settings"


def preview(client, source, **body):
    return client.post(f"/app/sources/{source.id}/chunks/preview", body, content_type="application/json")


def stored_chunks(source) -> list[str]:
    with workspace_scope(source.workspace_id):
        return list(
            Chunk.objects.filter(source_id=source.id).order_by("position").values_list("text", flat=True)
        )


def test_the_preview_shows_the_chunks_indexing_then_stores(client, owner, workspace, agent):
    source = index_text(workspace, agent, "FAQ", FAQ)
    assert len(stored_chunks(source)) < 12  # the default cuts across the records
    client.force_login(owner)
    shown = preview(client, source, chunk_size="", chunk_overlap="", record_separator="---").json()
    assert shown["record_separator"] == "---" and shown["total"] == len(shown["chunks"]) > 1
    assert all(c["text"].startswith("Q: Question number") for c in shown["chunks"])  # records kept whole
    assert stored_chunks(source) != [c["text"] for c in shown["chunks"]]  # nothing saved by a preview
    with workspace_scope(workspace.id):
        assert "record_separator" not in Source.objects.get(id=source.id).config

    response = client.post(
        settings_url(source),
        {"title": "FAQ", "chunk_size": "", "chunk_overlap": "", "record_separator": "---"},
    )
    assert response.status_code == 302
    with workspace_scope(workspace.id):
        source.refresh_from_db()
        assert source.status == "pending"  # marked for reindex through the lifecycle
        assert source.config["record_separator"] == "---"
        source_index(source=source)
    assert stored_chunks(source) == [c["text"] for c in shown["chunks"]]


def test_a_json_lines_separator_typed_as_backslash_n_and_a_smaller_size(client, owner, workspace, agent):
    rows = [{"sku": i, "name": f"Kettle model {i}", "colour": "steel"} for i in range(40)]
    lines = "\n".join(json.dumps(row) for row in rows)
    source = index_text(workspace, agent, "Catalogue", lines)
    client.force_login(owner)
    shown = preview(client, source, chunk_size="300", chunk_overlap="0", record_separator="\\n").json()
    assert shown["chunk_size"] == 300 and shown["record_separator"] == "\n"
    assert all(len(c["text"]) <= 300 for c in shown["chunks"])
    assert all(
        line.startswith("{") and line.endswith("}") for c in shown["chunks"] for line in c["text"].split("\n")
    )
    client.post(
        settings_url(source),
        {"title": "Catalogue", "chunk_size": "300", "chunk_overlap": "0", "record_separator": "\\n"},
    )
    page = client.get(settings_url(source)).content.decode()
    assert 'name="chunk_size"' in page and 'value="300"' in page and 'value="\\n"' in page


def test_pasted_text_is_previewed_instead_of_the_sources_own(client, owner, workspace, agent):
    source = index_text(workspace, agent, "Notes", "Some note about kettles.")
    client.force_login(owner)
    shown = preview(client, source, record_separator="---", preview_text="first\n---\n\n---\nsecond").json()
    # records whole, the empty one dropped, joined by a paragraph break instead of the separator (#56)
    assert [c["text"] for c in shown["chunks"]] == ["first\n\nsecond"]
    assert shown["chunks"][0]["document"] == "Pasted text"


def test_the_add_dialog_previews_and_adds_with_its_chunking(client, owner, workspace, agent):
    client.force_login(owner)
    body = {"content": FAQ, "chunk_size": "400", "chunk_overlap": "", "record_separator": "---"}
    shown = client.post(f"/app/agents/{agent.id}/chunks/preview", body, content_type="application/json")
    assert shown.status_code == 200
    assert all(c["text"].startswith("Q: ") for c in shown.json()["chunks"])
    added = client.post(f"/app/agents/{agent.id}/sources/add", {"kind": "text", "title": "FAQ", **body})
    assert added.status_code == 302
    with workspace_scope(workspace.id):
        source = Source.objects.get(title="FAQ")
    assert source.config["chunk_size"] == 400 and source.config["record_separator"] == "---"
    assert "chunk_overlap" not in source.config  # empty: the deployment's default


def test_settings_that_do_not_fit_are_refused_by_field_and_nothing_changes(client, owner, workspace, agent):
    source = index_text(workspace, agent, "FAQ", FAQ)
    client.force_login(owner)
    bad = preview(client, source, chunk_size="500", chunk_overlap="400")
    assert bad.status_code == 400 and "quarter" in bad.json()["chunk_overlap"][0]
    assert "chunk_size" in preview(client, source, chunk_size="50").json()
    response = client.post(
        settings_url(source), {"title": "Renamed", "chunk_size": "abc"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400 and "chunk_size" in response.json()
    with workspace_scope(workspace.id):
        source.refresh_from_db()
    assert source.title == "FAQ" and source.status == "done"  # nothing written


def test_the_preview_button_works_without_javascript(client, owner, workspace, agent):
    source = index_text(workspace, agent, "FAQ", FAQ)
    client.force_login(owner)
    page = client.post(
        settings_url(source), {"title": "FAQ", "record_separator": "---", "preview": "1"}
    ).content.decode()
    assert "data-chunk-summary" in page and page.count("data-chunk>") > 1
    with workspace_scope(workspace.id):
        source.refresh_from_db()
    assert "record_separator" not in source.config and source.status == "done"


def test_unchanged_chunking_does_not_reindex(client, owner, workspace, agent):
    source = index_text(workspace, agent, "FAQ", FAQ)
    client.force_login(owner)
    client.post(
        settings_url(source), {"title": "FAQ", "chunk_size": "", "chunk_overlap": "", "record_separator": ""}
    )
    with workspace_scope(workspace.id):
        source.refresh_from_db()
    assert source.status == "done"


def test_a_member_may_preview_but_not_save(client, member, workspace, agent):
    source = index_text(workspace, agent, "FAQ", FAQ)
    client.force_login(member)
    assert preview(client, source, record_separator="---").status_code == 200
    response = client.post(settings_url(source), {"title": "FAQ", "record_separator": "---"})
    assert response.status_code == 403
    add_preview = client.post(
        f"/app/agents/{agent.id}/chunks/preview", {"content": "x"}, content_type="application/json"
    )
    assert add_preview.status_code == 403


def test_an_outsider_gets_nothing(client, outsider, workspace, agent):
    source = index_text(workspace, agent, "FAQ", FAQ)
    client.force_login(outsider)
    assert preview(client, source, record_separator="---").status_code == 404
    add_preview = client.post(
        f"/app/agents/{agent.id}/chunks/preview", {"content": "x"}, content_type="application/json"
    )
    assert add_preview.status_code == 404
