"""Stock quotas under concurrency: N requests that each create stock at the same moment, every one on its
own thread and database connection, never leave the workspace with more than its plan allows (issue #56:
5 agents at once on a plan of 2 with 1 used gave 6). Each round starts its requests together at a barrier
and is repeated, so a check that counts and then inserts without holding anything is caught."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from agents.models import Agent
from agents.services import agent_create
from ingestion import lifecycle
from ingestion.push import documents as push
from sources import access, invitations, quotas
from sources.models import Document, Invitation, Membership, Plan, Source
from sources.plans import assign_plan
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db(transaction=True)
ROUNDS = 3


@pytest.fixture
def on_plan(workspace):
    def put(**limits: int) -> Plan:
        plan = Plan.objects.create(name="tight", label="Tight", **limits)
        assign_plan(workspace, "tight")
        return plan

    return put


def at_once(count: int, request: Callable[[int], Any]) -> list[str]:
    """Run request(0..count-1) on `count` threads released together; each answers "ok" or "refused"."""
    gate = threading.Barrier(count)

    def one(number: int) -> str:
        try:
            gate.wait(10)
            request(number)
            return "ok"
        except quotas.QuotaExceeded:
            return "refused"
        finally:
            connection.close()  # each thread had its own connection

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def count_of(workspace, model) -> int:
    with workspace_scope(workspace.id):
        return model.objects.count()


@pytest.mark.parametrize("requests", [2, 5, 12])
def test_agents_created_at_once_never_pass_the_plan(workspace, agent, on_plan, requests):
    on_plan(max_agents=2)  # `agent` is the one used
    for round_ in range(ROUNDS):
        answers = at_once(requests, lambda n, r=round_: agent_create(workspace=workspace, name=f"a{r}-{n}"))
        assert count_of(workspace, Agent) == 2, answers
        assert answers.count("ok") == (1 if round_ == 0 else 0), answers
        assert answers.count("refused") == requests - answers.count("ok")


def test_sources_created_at_once_never_pass_the_plan(workspace, agent, on_plan):
    on_plan(max_sources=3)
    for round_ in range(ROUNDS):

        def create(n: int, r: int = round_) -> None:
            lifecycle.source_create(
                workspace=workspace,
                agent_id=agent.id,
                kind="text",
                title=f"Note {r}-{n}",
                payload={"content": f"Note {r}-{n}: the depot opens at {n} o'clock."},
            )

        answers = at_once(6, create)
        assert count_of(workspace, Source) == 3, answers
        assert answers.count("ok") == (3 if round_ == 0 else 0), answers


def test_uploads_at_once_never_pass_the_plan(workspace, agent, on_plan):
    from django.core.files.uploadedfile import SimpleUploadedFile

    on_plan(max_sources=2)

    def upload(n: int) -> None:
        files = [SimpleUploadedFile(f"n{n}.txt", b"the depot opens at nine", content_type="text/plain")]
        lifecycle.upload_create(workspace=workspace, agent_id=agent.id, files=files)

    answers = at_once(5, upload)
    assert count_of(workspace, Source) == 2 and answers.count("ok") == 2, answers


def test_pushed_batches_at_once_never_pass_the_plan(workspace, agent, on_plan):
    """Two batches of 3 new documents on a plan of 5, to the same agent and to two agents."""
    second = agent_create(workspace=workspace, name="Second")
    on_plan(max_documents=5)
    for agents in ([agent, agent], [agent, second]):
        with workspace_scope(workspace.id):
            for source in Source.objects.all():
                lifecycle.source_delete(source=source)

        def batch(n: int, agents: list = agents) -> None:
            items = [(f"b{n}-{i}.md", {"title": f"B{n}", "text": f"Batch {n}, page {i}."}) for i in range(3)]
            push.put_documents(workspace=workspace, agent_id=agents[n].id, items=items)

        answers = at_once(2, batch)
        assert count_of(workspace, Document) == 3, answers
        assert sorted(answers) == ["ok", "refused"], answers


def test_members_added_at_once_never_pass_the_plan(workspace, owner, on_plan):
    on_plan(max_members=3)  # the owner holds one seat
    people = [get_user_model().objects.create_user(f"p{n}", f"p{n}@example.com") for n in range(6)]
    actor = Membership.unscoped.get(user=owner)
    answers = at_once(
        6, lambda n: access.member_add(actor=actor, identifier=people[n].username, role="member")
    )
    assert count_of(workspace, Membership) == 3 and answers.count("ok") == 2, answers


def test_invitations_sent_at_once_never_pass_the_plan(workspace, owner, on_plan):
    """Pending invitations hold a seat each: a full plan refuses the invitation, not its acceptance."""
    on_plan(max_members=3)
    actor = Membership.unscoped.get(user=owner)
    answers = at_once(
        6,
        lambda n: invitations.invite(
            actor=actor, email=f"guest{n}@example.com", role="member", base_url="http://testserver"
        ),
    )
    with workspace_scope(workspace.id):
        pending = Invitation.objects.filter(revoked_at__isnull=True, accepted_at__isnull=True).count()
    assert pending == 2 and answers.count("ok") == 2, answers
