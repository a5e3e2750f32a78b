"""What the admin UI's pages about agents show: the workspace's agents with their sources' counts, the test
retrieval panel, the widget's snippet. Reads only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.models import Agent
from ingestion.kinds.registry import get_kind
from sources.models import ACTIVE_STATUSES, Source, Status
from sources.tenancy import workspace_scope


def status_counts(sources: list[Source]) -> dict[str, int]:
    counts = {"total": len(sources), "active": 0, "done": 0, "failed": 0, "chunks": 0}
    for source in sources:
        if source.status in ACTIVE_STATUSES:
            counts["active"] += 1
        elif source.status == Status.DONE:
            counts["done"] += 1
        elif source.status == Status.FAILED:
            counts["failed"] += 1
        counts["chunks"] += source.chunks_count
    return counts


def agents_overview(workspace_id: int) -> list[dict[str, Any]]:
    """Each agent of a workspace with the counts of its sources. Belongs in agents/selectors.py."""
    with workspace_scope(workspace_id):
        agents = list(Agent.objects.order_by("name", "id"))
        sources = list(Source.objects.only("agent_id", "status", "chunks_count"))
    by_agent: dict[int, list[Source]] = {}
    for source in sources:
        by_agent.setdefault(source.agent_id, []).append(source)
    return [{"agent": agent, "counts": status_counts(by_agent.get(agent.id, []))} for agent in agents]


# --- testing retrieval -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalTest:
    query: str
    passages: list
    gate_enabled: bool
    backed: bool
    mode: str
    error: str = ""
    error_detail: str = ""

    @property
    def hits(self) -> list[dict[str, Any]]:
        """The passages as the page shows them; bars are clamped, since a cosine can be below zero."""

        def pct(value: float | None) -> int:
            return round(min(max(value or 0.0, 0.0), 1.0) * 100)

        return [
            {
                "title": p.document_title or p.source_title,
                "source_title": p.source_title,
                "url": p.url if get_kind(p.source_kind).cites_urls else "",
                "text": p.text,
                "score": p.score,
                "vector": p.vector_score or 0.0,
                "keyword": p.keyword_score or 0.0,
                "score_pct": pct(p.score),
                "vector_pct": pct(p.vector_score),
                "keyword_pct": pct(p.keyword_score),
            }
            for p in self.passages
        ]


def retrieval_test(*, agent: Agent, query: str) -> RetrievalTest:
    """The passages the agent would get for a question from a public visitor, and whether the scope gate
    would let the question through (the chat's own search settings, from agents.configuration)."""
    from agents.configuration import agent_search_params
    from agents.gate import is_backed
    from retrieval.services import search_passages

    params = agent_search_params(agent, audiences=[])
    mode = params.mode
    try:
        passages = search_passages(
            workspace_id=agent.workspace_id, query=query, params=params, agent_id=agent.id
        )
    except Exception as exc:  # the store is down: say so instead of a server error
        return RetrievalTest(
            query,
            [],
            agent.gate_enabled,
            False,
            mode,
            "The knowledge base can't be searched right now; try again in a minute.",
            repr(exc)[:500],
        )
    return RetrievalTest(query, passages, agent.gate_enabled, is_backed(agent, [passages]), mode)


# --- agents ------------------------------------------------------------------------------------------


def widget_snippet(*, host: str, agent: Agent) -> str:
    return f'<script src="{host}/static/agents/widget.js" data-agent="{agent.public_key}" defer></script>'
