"""The kind registry: a kind is one module plus one registry line; nothing else branches on a kind's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingestion.kinds import registry
from ingestion.kinds.config import KindError

ROOT = Path(__file__).resolve().parents[3]
KIND_NAMES = "|".join(["text", "url", "sitemap", "site", "feed", "auto", "upload", "notion", "gdoc", "push"])
# A kind's name compared, listed or filtered on: `kind == "url"`, `kind in (...)`, `kind__in=`,
# `kind="upload"` in a query, `kind() === "text"` in a script, `{% if row.kind == "upload" %}` in a template.
BRANCHES = [
    re.compile(rf"""kind\w*(\(\))?\s*(==|!=|===|!==)\s*["']({KIND_NAMES})["']"""),
    re.compile(rf"""["']({KIND_NAMES})["']\s*(==|!=|===|!==)\s*\w*kind"""),
    re.compile(rf"""kind\w*(\(\))?\s+(not\s+)?in\s+[\(\[\{{][^)\]}}]*["']({KIND_NAMES})["']"""),
    re.compile(r"""kind__in\s*=\s*[\(\[\{]"""),
    re.compile(rf"""\bkind\s*=\s*["']({KIND_NAMES})["']"""),
    re.compile(r"""\b(CRAWLED|URL|WEB)_KINDS\b"""),
]
SCANNED = ["agents", "config", "ingestion", "integrations", "retrieval", "sources", "templates"]
ALLOWED = ["ingestion/kinds/", "/migrations/"]


def test_no_code_outside_the_kinds_branches_on_a_kinds_name():
    offenders = []
    for top in SCANNED:
        for path in (ROOT / top).rglob("*"):
            if path.suffix not in {".py", ".html", ".js"}:
                continue
            relative = str(path.relative_to(ROOT))
            if any(part in relative for part in ALLOWED):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if any(pattern.search(line) for pattern in BRANCHES):
                    offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == []


def test_the_scan_finds_a_branch_when_there_is_one():
    # The patterns above must catch what they are for, or the test above could not fail.
    for line in [
        'if source.kind == "upload":',
        "kind in CRAWLED_KINDS",
        'filter(kind__in=["url"])',
        'Source.objects.filter(kind="auto")',
        'if (kind() === "text")',
        '{% if row.kind == "upload" %}',
    ]:
        assert any(pattern.search(line) for pattern in BRANCHES), line


def test_every_registered_kind_loads_and_names_itself():
    for name in registry.KINDS:
        kind = registry.get_kind(name)
        assert kind.name == name and kind.label and kind.icon


def test_an_unknown_kind_is_refused_with_the_known_ones():
    with pytest.raises(KindError) as refused:
        registry.get_kind("carrier-pigeon")
    assert "known kinds" in refused.value.errors["kind"][0]


@pytest.fixture
def faq_kind(monkeypatch):
    # The one registry line a new kind needs.
    monkeypatch.setitem(registry.KINDS, "faq", "tests.ingestion.kinds.throwaway.FaqKind")
    return registry.get_kind("faq")


@pytest.mark.django_db(transaction=True)
def test_a_new_kind_runs_end_to_end_with_nothing_but_its_module(
    faq_kind, api, agent, client, owner, outsider_api
):
    from ingestion import tasks
    from sources.models import Source

    pairs = [
        {
            "question": "How long does the kettle warranty last?",
            "answer": "The kettle warranty lasts 7 years.",
        },
        {"question": "Can I return a used kettle?", "answer": "Used kettles can be returned within 30 days."},
    ]
    bad = api.post(
        "/api/v1/sources", {"kind": "faq", "agent": agent.id, "title": "FAQ", "pairs": []}, format="json"
    )
    assert bad.status_code == 400 and "pairs" in bad.json()["error"]["fields"]
    created = api.post(
        "/api/v1/sources",
        {"kind": "faq", "agent": agent.id, "title": "Kettle FAQ", "pairs": pairs},
        format="json",
    )
    assert created.status_code == 201, created.content
    source_id = created.json()["id"]
    # The task a worker would run for this kind (its default: index what it created).
    tasks.index_source(workspace_id=agent.workspace_id, source_id=source_id)
    body = api.get(f"/api/v1/sources/{source_id}").json()
    assert body["status"] == "done" and body["pages_done"] == 2, body
    hits = api.get("/api/v1/search", {"q": "kettle warranty years", "top_k": 3}).json()["results"]
    assert "7 years" in hits[0]["text"]
    assert outsider_api.get(f"/api/v1/sources/{source_id}").status_code == 404
    # The web UI offers it in the add dialog and lists it with its label.
    client.force_login(owner)
    page = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert 'value="faq"' in page and "Questions and their answers." in page and "FAQ</span>" in page
    # Reindex and delete need nothing of it either.
    assert api.post(f"/api/v1/sources/{source_id}/reindex").status_code == 202
    tasks.index_source(workspace_id=agent.workspace_id, source_id=source_id)
    assert api.get(f"/api/v1/sources/{source_id}").json()["status"] == "done"
    assert api.delete(f"/api/v1/sources/{source_id}").status_code == 204
    assert not Source.unscoped.filter(id=source_id).exists()
