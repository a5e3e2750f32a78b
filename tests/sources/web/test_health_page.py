"""The agent's Health tab shows the doctor's findings with what to do; members may look, outsiders get 404."""

from __future__ import annotations

import pytest

from sources.models import Source, Status
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db


def test_members_see_each_finding_with_what_to_do(client, member, workspace, agent):
    source = index_text(workspace, agent, "Kettle care", "Kettles carry a two-year warranty.")
    with workspace_scope(workspace.id):
        Source.objects.filter(id=source.id).update(status=Status.FAILED, error="The page answered 404.")
        agent.min_score = 0.4  # a floor without an off-topic reply: the gate is off
        agent.save()
    client.force_login(member)
    response = client.get(f"/app/agents/{agent.id}/health")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-status="error"' in page and ">Health</a>" in page
    assert 'data-finding="sources" data-severity="error"' in page
    assert "The page answered 404." in page and "What to do: Open each failed source" in page
    assert 'data-finding="gate" data-severity="warning"' in page
    assert 'data-finding="knowledge"' not in page  # its passages are indexed


def test_another_workspace_gets_404(client, outsider, agent):
    client.force_login(outsider)
    assert client.get(f"/app/agents/{agent.id}/health").status_code == 404
