"""The "Add source" dialog's rules: titles from pasted text, errors under the field they belong to."""

from __future__ import annotations

import pytest

from sources.models import Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def add(client, agent, data):
    return client.post(f"/app/agents/{agent.id}/sources/add", data, HTTP_ACCEPT="application/json")


def test_text_without_a_title_is_titled_from_its_first_line(client, owner, agent):
    client.force_login(owner)
    pasted = "\n\n# Opening hours\nNine to five."
    response = add(client, agent, {"kind": "text", "title": "", "content": pasted})
    assert response.status_code == 201, response.content
    long_line = "Our returns policy covers every kettle bought in the last thirty days, " * 3
    assert add(client, agent, {"kind": "text", "content": long_line}).status_code == 201
    with workspace_scope(agent.workspace_id):
        titles = set(Source.objects.values_list("title", flat=True))
    assert "Opening hours" in titles
    (cut,) = titles - {"Opening hours"}
    assert cut.endswith("\u2026") and len(cut) <= 81 and long_line.startswith(cut[:-1])


def test_an_empty_address_is_not_reported_under_the_optional_title(client, owner, agent):
    client.force_login(owner)
    response = add(client, agent, {"kind": "url", "url": "", "title": ""})
    assert response.status_code == 400
    assert set(response.json()) == {"url"}  # field -> messages; nothing under the title
