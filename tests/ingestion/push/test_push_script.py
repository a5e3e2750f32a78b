"""scripts/push_docs.py, the customer's CI script, run as a process against a live server over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sources.models import Document
from sources.services import api_key_create
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db(transaction=True)
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "push_docs.py"


def run_script(live_server, key: str, agent, root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GROUNDED_API_KEY": key}
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(root), "--api", live_server.url, "--agent", str(agent.id), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def pushed(workspace) -> dict[str, Document]:
    with workspace_scope(workspace.id):
        return {d.external_id: d for d in Document.objects.all()}


def test_the_ci_script_pushes_re_pushes_and_prunes(live_server, workspace, agent, tmp_path):
    _key, raw_key = api_key_create(workspace=workspace, name="ci")
    root = tmp_path / "docs"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "install.md").write_text(
        "---\ntitle: Install\ntype: guide\naudiences: [staff]\n---\n# Install\n\nPlug the kettle in.\n"
    )
    (root / "faq.mdx").write_text("import X from 'y'\n\n<Note>Kettles boil water.</Note>\n")
    (root / "page.html").write_text(
        "<html><head><title>Page</title></head><body><p>Hello page.</p></body></html>"
    )
    (root / "notes.txt").write_text("Support hours are nine to five.\n")

    first = run_script(live_server, raw_key, agent, root, "--base-url", "https://docs.acme.example")
    assert first.returncode == 0, first.stderr
    assert "4 created, 0 updated, 0 unchanged, 0 removed, 0 failed." in first.stdout
    documents = pushed(workspace)
    assert set(documents) == {"guides/install.md", "faq.mdx", "page.html", "notes.txt"}
    install = documents["guides/install.md"]
    assert install.title == "Install" and install.url == "https://docs.acme.example/guides/install"
    assert install.metadata == {"type": "guide", "audience": ["staff"]}
    assert documents["faq.mdx"].text.strip() == "Kettles boil water."
    assert documents["page.html"].title == "Page" and "Hello page." in documents["page.html"].text

    again = run_script(live_server, raw_key, agent, root, "--base-url", "https://docs.acme.example")
    assert "0 created, 0 updated, 4 unchanged" in again.stdout, again.stdout + again.stderr

    (root / "notes.txt").unlink()
    dry = run_script(live_server, raw_key, agent, root, "--prune", "--dry-run")
    assert "remove   notes.txt" in dry.stdout and "notes.txt" in pushed(workspace)
    pruned = run_script(
        live_server, raw_key, agent, root, "--prune", "--base-url", "https://docs.acme.example"
    )
    assert pruned.returncode == 0, pruned.stderr
    assert "removed  notes.txt" in pruned.stdout
    assert set(pushed(workspace)) == {"guides/install.md", "faq.mdx", "page.html"}


def test_the_ci_script_fails_when_a_document_is_refused(live_server, workspace, agent, tmp_path):
    _key, raw_key = api_key_create(workspace=workspace, name="ci")
    (tmp_path / "good.md").write_text("# Good\n\nFine text.\n")
    (tmp_path / "bad.md").write_text("---\nlang: fr\n---\n")  # no text, and a key we set ourselves
    result = run_script(live_server, raw_key, agent, tmp_path)
    assert result.returncode == 1
    assert "error    bad.md" in result.stderr
    assert "1 created" in result.stdout and "1 failed" in result.stdout
    wrong_key = run_script(live_server, "gk_00000000_nope", agent, tmp_path)
    assert wrong_key.returncode == 1 and "401" in wrong_key.stderr
