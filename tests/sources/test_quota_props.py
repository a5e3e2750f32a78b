"""Property: however many requests (N = 2-20) add stock to a workspace at the same moment, on its own thread
and database connection each, the workspace ends with exactly as much as its plan allows, never more, and
every request beyond the room left is refused with QuotaExceeded (issue #56). Hypothesis draws the stock
(agents, sources, pushed documents, members, invitations), N, the limit and what is already used;
test_quota_races.py keeps the cases the issue reported.

Each example gets a workspace of its own, so examples of one test do not see each other's rows."""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import Agent
from agents.services import agent_create
from ingestion import lifecycle
from ingestion.push import documents as push
from sources import access, invitations
from sources.models import Document, Invitation, Membership, Plan, Source, Workspace
from sources.plans import assign_plan
from sources.tenancy import workspace_scope
from tests.factories import make_member
from tests.sources.test_quota_races import at_once

pytestmark = pytest.mark.django_db(transaction=True)
_numbers = itertools.count()


def _add_agent(workspace: Workspace, n: int) -> None:
    agent_create(workspace=workspace, name=f"Bot {n}")


def _add_source(workspace: Workspace, n: int) -> None:
    lifecycle.source_create(
        workspace=workspace,
        agent_id=_first_agent(workspace).id,
        kind="text",
        title=f"Note {n}",
        payload={"content": f"Note {n}: the depot opens at {n % 12 + 1} o'clock."},
    )


def _add_document(workspace: Workspace, n: int) -> None:
    items = [(f"notes/{n}.md", {"title": f"Note {n}", "text": f"Depot {n} opens at nine."})]
    push.put_documents(workspace=workspace, agent_id=_first_agent(workspace).id, items=items)


def _add_member(workspace: Workspace, n: int) -> None:
    name = f"w{workspace.id}-p{n}"
    get_user_model().objects.create_user(name, f"{name}@example.com")
    access.member_add(actor=_owner(workspace), identifier=name, role="member")


def _add_invitation(workspace: Workspace, n: int) -> None:
    invitations.invite(
        actor=_owner(workspace), email=f"guest{n}@example.com", role="member", base_url="http://testserver"
    )


def _first_agent(workspace: Workspace) -> Agent:
    with workspace_scope(workspace.id):
        return Agent.objects.order_by("id").first()


def _owner(workspace: Workspace) -> Membership:
    return Membership.unscoped.get(workspace=workspace, role="owner")


def _pending_invitations():
    return Invitation.objects.filter(revoked_at__isnull=True, accepted_at__isnull=True)


#: stock -> (the plan's field, one request adding one, what counts against the limit, what one workspace
#: holds before any request: its owner's seat for members and invitations, its agent for agents)
STOCK = {
    "agents": ("max_agents", _add_agent, lambda: Agent.objects.count(), 1),
    "sources": ("max_sources", _add_source, lambda: Source.objects.count(), 0),
    "documents": ("max_documents", _add_document, lambda: Document.objects.count(), 0),
    "members": ("max_members", _add_member, lambda: Membership.objects.count(), 1),
    "invitations": (
        "max_members",
        _add_invitation,
        lambda: Membership.objects.count() + _pending_invitations().count(),
        1,
    ),
}


def _fresh_workspace(plan_field: str, limit: int) -> Workspace:
    number = next(_numbers)
    workspace = Workspace.objects.create(name=f"W{number}", slug=f"props-{number}")
    make_member(workspace, f"owner-{number}", "owner")
    with workspace_scope(workspace.id):
        Agent.objects.create(name="Support bot")
    Plan.objects.create(name=f"tight-{number}", label="Tight", **{plan_field: limit})
    assign_plan(workspace, f"tight-{number}")
    return workspace


@pytest.fixture(autouse=True)
def _no_jobs_left():
    """Sources and documents created here queue index jobs that no worker runs: dropped afterwards."""
    yield
    from config.celery import app

    app.control.purge()


@pytest.mark.parametrize("stock", sorted(STOCK))
@settings(max_examples=5, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    requests=st.integers(min_value=2, max_value=20),
    room=st.integers(min_value=0, max_value=4),
    used=st.integers(min_value=0, max_value=2),
)
def test_stock_added_at_once_fills_the_plan_and_never_passes_it(stock, requests, room, used):
    plan_field, add, count, held = STOCK[stock]
    limit = held + used + room
    workspace = _fresh_workspace(plan_field, limit)
    for n in range(used):  # added one by one before the burst
        add(workspace, 10_000 + n)
    answers = at_once(requests, lambda n: add(workspace, n))
    with workspace_scope(workspace.id):
        ended_with = count()
    assert ended_with == held + used + min(room, requests) <= limit, (stock, answers)
    assert answers.count("ok") == min(room, requests), answers
    assert answers.count("refused") == requests - answers.count("ok"), answers
