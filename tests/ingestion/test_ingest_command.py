"""`manage.py ingest PATH --agent ID`: a folder tree with frontmatter, MDX, text and a PDF, pushed through the
documents service; dry runs write nothing, re-runs embed nothing, --prune removes only what is gone."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from ingestion import tasks
from ingestion.push.folder import citation_url, clean_mdx
from sources.models import Chunk, Document, Source
from sources.tenancy import workspace_scope
from tests.fakes.openai_server import FakeProvider, openai_compatible_server
from tests.ingestion.parsers.builders import pdf_with_lines

pytestmark = pytest.mark.django_db

INSTALL = """---
title: Installing the kettle
type: guide
tags: [setup, kettle]
updated: 2024-05-01
sidebar-position: 2
audiences: [staff, partners]
nested: {a: 1}
---
# Install

Place the kettle on a flat, dry surface away from the edge of the counter, and plug it in.
"""
CALLOUT = """---
title: Safety
---
import { Callout } from "@site/components";
export const meta = {hidden: true};

# Safety

<Callout type="warning">
Never fill the kettle above the MAX line: boiling water can spill from the spout.
</Callout>

```jsx
<Callout>kept in code</Callout>
```
"""
PDF_LINE = "The heating element carries a two year warranty."


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "install.md").write_text(INSTALL)
    (root / "guides" / "safety.mdx").write_text(CALLOUT)
    (root / "index.md").write_text(
        "# Kettle docs\n\nEverything about the Acme kettle, from unboxing to descaling.\n"
    )
    (root / "notes.txt").write_text("Support hours are nine to five on weekdays.\n")
    (root / "manual.pdf").write_bytes(pdf_with_lines([[(72, 700, PDF_LINE)]]))
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.md").write_text("not a document")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return root


@pytest.fixture
def provider():
    with openai_compatible_server(FakeProvider()) as running:
        settings = {
            "default": {
                "BACKEND": "retrieval.embedders.openai.OpenAIEmbedder",
                "OPTIONS": {"base_url": running.base_url, "model": "fake-embed", "api_key": running.api_key},
            }
        }
        with override_settings(EMBEDDERS=settings):
            yield running


def ingest(root: Path, agent, *args: str, fails: str = "") -> str:
    """The command's output; with `fails`, the command must end with that error (after doing its work)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("ingest", str(root), "--agent", str(agent.id), *args, stdout=out, stderr=err)
    except CommandError as exc:
        assert fails and fails in str(exc), exc
    else:
        assert not fails, f"the command did not fail with {fails!r}"
    return out.getvalue() + err.getvalue()


def embedding_calls(provider) -> int:
    return sum(1 for r in provider.requests if r["path"] == "/v1/embeddings")


def run_index_queue(workspace) -> None:
    with workspace_scope(workspace.id):
        pending = list(Document.objects.filter(status="pending").values_list("id", flat=True))
    for document_id in pending:
        tasks.index_document(workspace_id=workspace.id, document_id=document_id)


def documents(workspace) -> dict[str, Document]:
    with workspace_scope(workspace.id):
        return {d.external_id: d for d in Document.objects.all()}


def rows(workspace) -> tuple[int, int, int]:
    with workspace_scope(workspace.id):
        return Source.objects.count(), Document.objects.count(), Chunk.objects.count()


def test_a_folder_becomes_pushed_documents(tree, agent, workspace, provider):
    output = ingest(tree, agent, "--base-url", "https://docs.acme.example/")
    assert "5 created" in output, output
    pushed = documents(workspace)
    assert set(pushed) == {"guides/install.md", "guides/safety.mdx", "index.md", "notes.txt", "manual.pdf"}

    install = pushed["guides/install.md"]
    assert install.title == "Installing the kettle"
    assert install.url == "https://docs.acme.example/guides/install"
    assert install.metadata == {
        "type": "guide",
        "tags": ["setup", "kettle"],
        "updated": "2024-05-01",
        "sidebar_position": 2,
        "audience": ["staff", "partners"],
    }
    assert "'nested' skipped" in output  # said, not silently dropped
    assert install.text.startswith("# Install") and "title:" not in install.text

    safety = pushed["guides/safety.mdx"].text
    assert "MAX line" in safety and "import" not in safety and '<Callout type="warning">' not in safety
    assert "<Callout>kept in code</Callout>" in safety
    assert pushed["index.md"].url == "https://docs.acme.example/"
    assert pushed["index.md"].title == "Kettle docs"
    assert pushed["notes.txt"].url == "https://docs.acme.example/notes.txt"
    assert PDF_LINE in pushed["manual.pdf"].text and pushed["manual.pdf"].title == "manual.pdf"

    run_index_queue(workspace)
    assert {d.status for d in documents(workspace).values()} == {"done"}
    assert embedding_calls(provider) > 0


def test_dry_run_writes_nothing_and_shows_the_chunks(
    tree, agent, workspace, provider, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        output = ingest(tree, agent, "--dry-run")
    assert rows(workspace) == (0, 0, 0) and callbacks == [] and embedding_calls(provider) == 0
    assert "create   guides/install.md (1 chunks)" in output
    assert "[0] # Install Place the kettle" in output
    assert "Dry run: 5 to create, 0 to change, 0 unchanged, 0 to remove. Nothing was written." in output

    ingest(tree, agent)
    run_index_queue(workspace)
    before, calls = rows(workspace), embedding_calls(provider)
    (tree / "notes.txt").write_text("Support hours are eight to six on weekdays.\n")
    (tree / "index.md").unlink()
    with django_capture_on_commit_callbacks() as callbacks:
        output = ingest(tree, agent, "--dry-run", "--prune")
    assert "change   notes.txt (1 chunks)" in output and "eight to six" in output
    assert "remove   index.md" in output
    assert "1 to change, 3 unchanged, 1 to remove" in output
    assert rows(workspace) == before and callbacks == [] and embedding_calls(provider) == calls
    assert "nine to five" in documents(workspace)["notes.txt"].text


def test_a_rerun_with_nothing_changed_embeds_nothing(tree, agent, workspace, provider):
    ingest(tree, agent)
    run_index_queue(workspace)
    calls = embedding_calls(provider)
    output = ingest(tree, agent)
    assert "0 created, 0 updated (queued for indexing), 5 unchanged, 0 removed." in output
    run_index_queue(workspace)
    assert embedding_calls(provider) == calls


def test_prune_removes_only_documents_whose_files_are_gone(tree, agent, workspace, provider):
    ingest(tree, agent)
    run_index_queue(workspace)
    (tree / "notes.txt").unlink()
    (tree / "manual.pdf").write_bytes(b"%PDF-1.7 this file is damaged")  # still there, though unreadable
    # Without --prune nothing is removed; the unreadable file is reported and the run fails.
    output = ingest(tree, agent, fails="1 of 4 files could not be pushed")
    assert "error    manual.pdf:" in output
    assert "notes.txt" in documents(workspace)
    output = ingest(tree, agent, "--prune", fails="1 of 4 files could not be pushed")
    assert "removed  notes.txt" in output and "removed  manual.pdf" not in output
    remaining = documents(workspace)
    assert set(remaining) == {"guides/install.md", "guides/safety.mdx", "index.md", "manual.pdf"}
    assert PDF_LINE in remaining["manual.pdf"].text  # the unreadable file's last good text is kept
    with workspace_scope(workspace.id):
        assert not Chunk.objects.filter(document__external_id="notes.txt").exists()


def test_an_unknown_agent_or_folder_is_refused(tree, tmp_path):
    with pytest.raises(CommandError, match="No agent with id 999999"):
        call_command("ingest", str(tree), "--agent", "999999", stdout=io.StringIO())
    with pytest.raises(CommandError, match="is not a folder"):
        call_command("ingest", str(tmp_path / "missing"), "--agent", "1", stdout=io.StringIO())


def test_citation_links_follow_the_docs_site_shape():
    base = "https://docs.acme.example/v2"
    assert citation_url("guides/install.md", base) == "https://docs.acme.example/v2/guides/install"
    assert citation_url("guides/README.md", base) == "https://docs.acme.example/v2/guides/"
    assert citation_url("manual of use.pdf", base) == "https://docs.acme.example/v2/manual%20of%20use.pdf"
    assert citation_url("guides/install.md", "") == ""


def test_mdx_code_fences_are_left_alone():
    cleaned = clean_mdx("import X from 'y'\n\n<Note>Hello</Note>\n\n```\nimport z\n<Tag/>\n```\n")
    assert cleaned == "Hello\n\n```\nimport z\n<Tag/>\n```\n"
