"""The doctor's checks of one agent: its model, its own embedder, its sources and their passages, its scope
gate and the sites that may embed it. They read the agent's settings and sources, so they run inside its
workspace's scope (diagnose() opens it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from agents.doctor.findings import ERROR, WARNING, Finding
from agents.embedding import embedder_for_agent
from agents.models import Agent
from config.outbound import OutboundClient, OutboundError
from retrieval.embedders.base import EmbeddingError
from sources.models import Chunk, Schedule, Source, Status

#: A scheduled sync this late has not merely waited for the next beat: the beat or the workers are missing.
SYNC_GRACE = timedelta(hours=1)
MAX_LISTED = 5  # sources named in one finding; the rest are counted


def _model_error(status: int, body: str) -> tuple[str, str]:
    if status in (401, 403):
        return (
            "The model provider rejected the API key.",
            "Paste a valid API key for this provider in the agent's settings (Model API key).",
        )
    if status == 404:
        return (
            "The model provider does not know this model or address (HTTP 404).",
            "Check the model name and that the base URL ends where /chat/completions lives (often …/v1).",
        )
    if status == 429:
        return (
            "The model provider refuses calls for now: rate limit or quota reached (HTTP 429).",
            "Check the account's quota and billing with the provider, or wait and run the doctor again.",
        )
    return (
        f"The model provider answered with an error (HTTP {status}).",
        "Check the provider's status page and the model name; the detail shows what it said.",
    )


def check_model(agent: Agent) -> list[Finding]:
    """One call for a single token, when a model is configured (the built-in answerer needs none)."""
    if not agent.llm_base_url and not agent.llm_model:
        return []
    if not agent.uses_llm:
        missing = "model name" if agent.llm_base_url else "base URL"
        return [
            Finding(
                "model",
                WARNING,
                f"The model is half configured (no {missing}), so the built-in answerer is used.",
                f"Set the model's {missing} in the agent's settings, or clear both to use the built-in "
                "answerer.",
            )
        ]
    url = agent.llm_base_url.rstrip("/") + "/chat/completions"
    body = {"model": agent.llm_model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}
    headers = {"Authorization": f"Bearer {agent.llm_api_key}"} if agent.llm_api_key else {}
    try:
        with OutboundClient() as client:
            status, raw = client.request("POST", url, json=body, headers=headers)
    except OutboundError as exc:
        return [
            Finding(
                "model",
                ERROR,
                f"The model could not be called: {exc.message}",
                "Check the model base URL in the agent's settings, and that this server may reach it.",
                exc.detail,
            )
        ]
    detail = raw[:2000].decode("utf-8", "replace")
    if status >= 400:
        problem, action = _model_error(status, detail)
        return [Finding("model", ERROR, problem, action, detail)]
    try:
        json.loads(raw)
    except ValueError:
        return [
            Finding(
                "model",
                ERROR,
                "The model base URL answered, but not as an OpenAI-compatible API.",
                "Point the base URL at the provider's OpenAI-compatible API (often ending in /v1).",
                detail,
            )
        ]
    return []


def _listed(sources: list[Source], reason: Callable[[Source], str]) -> str:
    lines = [f"{s.title} (#{s.id}): {reason(s)}" for s in sources[:MAX_LISTED]]
    if len(sources) > MAX_LISTED:
        lines.append(f"and {len(sources) - MAX_LISTED} more")
    return "; ".join(lines)


def check_sources(agent: Agent) -> list[Finding]:
    """Sources that failed, and scheduled syncs that are overdue or whose last run reported an error."""
    findings = []
    failed = list(Source.objects.filter(agent=agent, status=Status.FAILED).order_by("id"))
    if failed:
        findings.append(
            Finding(
                "sources",
                ERROR,
                f"{len(failed)} source(s) failed: "
                + _listed(failed, lambda s: s.error or "no reason recorded"),
                "Open each failed source, fix what its error says (address, file, access), then retry it.",
            )
        )
    late = timezone.now() - SYNC_GRACE
    overdue = list(
        Source.objects.filter(agent=agent, paused=False, next_sync_at__lt=late)
        .exclude(schedule=Schedule.OFF)
        .order_by("next_sync_at")
    )
    if overdue:
        findings.append(
            Finding(
                "sources",
                WARNING,
                f"{len(overdue)} scheduled sync(s) are overdue, so answers may be out of date: "
                + _listed(overdue, lambda s: f"due {s.next_sync_at:%Y-%m-%d %H:%M} UTC"),
                "Check that Celery beat and the workers run; a sync starts within a minute of its date.",
            )
        )
    sync_errors = [
        s
        for s in Source.objects.filter(agent=agent).exclude(last_sync={}).exclude(status=Status.FAILED)
        if s.last_sync.get("error") or s.last_sync.get("failed")
    ]
    if sync_errors:

        def reason(s: Source) -> str:
            return s.last_sync.get("error") or f"{s.last_sync.get('failed')} page(s) failed"

        findings.append(
            Finding(
                "sources",
                WARNING,
                f"The last sync of {len(sync_errors)} source(s) went wrong: {_listed(sync_errors, reason)}",
                "Open the source to see which pages failed and why; retry the failed pages once fixed.",
            )
        )
    return findings


def check_embeddings(agent: Agent) -> list[Finding]:
    from retrieval.vectors import embedded_by_another_model

    stale = (
        Chunk.objects.filter(source__agent=agent)
        .filter(embedded_by_another_model(agent.workspace_id))
        .count()
    )
    if not stale:
        return []
    return [
        Finding(
            "embeddings",
            ERROR,
            f"{stale} passage(s) were embedded by another model than the configured one; vector search "
            "cannot see them.",
            "Reindex them: `manage.py reindex --stale-only`, or Reindex on each source.",
        )
    ]


def check_knowledge(agent: Agent) -> list[Finding]:
    sources = Source.objects.filter(agent=agent)
    if not sources.exists():
        return [
            Finding(
                "knowledge",
                ERROR,
                "The agent has no sources, so it has nothing to answer from.",
                "Add a source: a web page, a site, a file or pasted text.",
            )
        ]
    if not Chunk.objects.filter(source__agent=agent).exists():
        busy = sources.filter(status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING]).exists()
        return [
            Finding(
                "knowledge",
                WARNING if busy else ERROR,
                "The knowledge base is empty: no passage is indexed yet.",
                "Wait for the sources being indexed to finish."
                if busy
                else "Check the sources' errors; add a source with text in it.",
            )
        ]
    searchable = Chunk.objects.filter(source__agent=agent).exclude(
        source__paused=True, source__hidden_while_paused=True
    )
    if not searchable.exists():
        return [
            Finding(
                "knowledge",
                ERROR,
                "Every indexed source is paused and hidden from search.",
                "Resume a source, or let paused sources stay searchable.",
            )
        ]
    return []


def check_gate(agent: Agent) -> list[Finding]:
    if agent.min_score is not None and not agent.offtopic_reply.strip():
        return [
            Finding(
                "gate",
                WARNING,
                "A score floor is set but no off-topic reply, so the scope gate is off: questions "
                "outside the knowledge base are answered anyway.",
                "Write an off-topic reply in the agent's settings (or clear the score floor).",
            )
        ]
    if agent.offtopic_reply.strip() and agent.min_score is None:
        return [
            Finding(
                "gate",
                WARNING,
                "An off-topic reply is written but no score floor is set, so it is never used.",
                "Set a score floor in the agent's settings; the Test retrieval tab shows typical scores.",
            )
        ]
    return []


def check_origins(agent: Agent) -> list[Finding]:
    if agent.allowed_origins:
        return []
    return [
        Finding(
            "origins",
            WARNING,
            "No website may embed the widget: the allowed origins are empty.",
            "Add the sites that embed the widget (https://www.example.com) in the agent's settings.",
        )
    ]


def check_agent_embedder(agent: Agent) -> list[Finding]:
    """An agent's own embedder (agents/embedding.py): one call, with what to do when it fails."""
    embedder = embedder_for_agent(agent.id)
    if embedder is None:
        return []
    try:
        embedder.embed_query("doctor")
    except EmbeddingError as exc:
        return [
            Finding(
                "embedder",
                ERROR,
                f"This agent's embedding provider does not work: {exc.message}",
                "Fix the model base URL, key or embedding model in its settings, or switch its embeddings "
                "back to the deployment's embedder; its sources cannot be indexed or searched by meaning "
                "until then.",
                exc.detail,
            )
        ]
    return []
