"""Writes on agents: create and delete an agent (and a whole workspace), start a conversation, count a chat
message against the plan, and queue the page a widget opened on as a source. The chat turn itself is
agents/turn.py."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from agents.models import Agent, Conversation
from sources import quotas
from sources.models import Workspace
from sources.tenancy import workspace_scope


def agent_create(*, workspace: Workspace, name: str) -> Agent:
    """Raises QuotaExceeded when the workspace's plan has all its agents already."""
    with workspace_scope(workspace.id), transaction.atomic():
        quotas.check_agents(workspace)  # holds the workspace until the new agent is committed
        return Agent.objects.create(name=name.strip()[:200])


def agent_delete(*, agent: Agent) -> int:
    """Delete an agent with its sources (through source_delete, so no vector point, posting or stored
    file is left behind), conversations and cache. Returns how many sources went with it."""
    from ingestion.lifecycle import source_delete
    from retrieval import cache as semantic_cache
    from sources.models import Source

    workspace_id, agent_id = agent.workspace_id, agent.id
    with workspace_scope(workspace_id):
        sources = list(Source.objects.filter(agent_id=agent_id))
        for source in sources:
            source_delete(source=source)
        agent.delete()
    semantic_cache.invalidate(workspace_id=workspace_id, agent_id=agent_id)
    return len(sources)


def workspace_delete(*, workspace: Workspace) -> dict[str, int]:
    """Delete a workspace with everything in it: each agent through agent_delete (so each source goes through
    the lifecycle: vector points, keyword postings and stored files with it), then the workspace row, whose
    memberships, keys and remaining rows cascade (each agent's cache went with it). Returns what went."""
    with workspace_scope(workspace.id):
        agents = list(Agent.objects.all())
    deleted = {"agents": len(agents), "sources": 0}
    for agent in agents:
        deleted["sources"] += agent_delete(agent=agent)
    workspace_id = workspace.id
    Workspace.objects.filter(id=workspace_id).delete()
    return deleted


def admit_chat_message(*, agent: Agent) -> None:
    """Count one user message against the plan's chat messages this month, before the turn starts (and
    before anything is stored); raises QuotaExceeded when none are left."""
    quotas.take(agent.workspace, "chat_messages", 1)


def start_conversation(*, agent: Agent, visitor_id: str = "") -> Conversation:
    with workspace_scope(agent.workspace_id):
        return Conversation.objects.create(agent=agent, visitor_id=visitor_id)


def queue_auto_source(*, agent: Agent, page_url: str) -> bool:
    """Queue a page a visitor opened the widget on, if it belongs to an allowed origin, is new, and
    the agent is within its hourly budget of automatic sources."""
    from urllib.parse import urlsplit

    from django.conf import settings
    from django.core.cache import cache

    from ingestion.kinds.auto import AutoKind, visited_page_known, visited_page_url
    from ingestion.kinds.config import KindError
    from ingestion.lifecycle import source_create

    parts = urlsplit(page_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    if origin not in {o.rstrip("/") for o in agent.allowed_origins}:
        return False
    url = visited_page_url(page_url)
    with workspace_scope(agent.workspace_id):
        if visited_page_known(agent_id=agent.id, url=url):
            return False
        budget_key = f"auto-sources:{agent.workspace_id}:{agent.id}:{int(timezone.now().timestamp() // 3600)}"
        cache.add(budget_key, 0, timeout=3700)
        if cache.incr(budget_key) > settings.AUTO_SOURCES_PER_HOUR:
            return False
        try:
            source_create(
                workspace=agent.workspace,
                agent_id=agent.id,
                kind=AutoKind.name,
                title="",
                payload={"url": url},
            )
        except (KindError, quotas.QuotaExceeded):
            return False  # e.g. a page on a private address, or the plan is full
    return True
