"""The doctor: why an agent answers badly, in findings a person can act on.

Each check is a small function returning findings (severity, what is wrong, what to do); no finding means the
check passed. Deployment checks (embedder, vector store, PostgreSQL, Redis, broker, workers) reuse the
readiness checks of config/health.py, so /readyz and the doctor never disagree. Agent checks read the agent's
own settings and sources and must run inside its workspace's scope (diagnose() opens it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import timedelta
from typing import Any

from django.utils import timezone

from agents.embedding import check_agent_embedder
from agents.models import Agent
from config import health
from config.outbound import OutboundClient, OutboundError
from sources.models import Chunk, Schedule, Source, Status
from sources.tenancy import workspace_scope

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}
#: A scheduled sync this late has not merely waited for the next beat: the beat or the workers are missing.
SYNC_GRACE = timedelta(hours=1)
MAX_LISTED = 5  # sources named in one finding; the rest are counted


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str
    problem: str
    action: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


# --- the deployment ------------------------------------------------------------------------------------

#: What to do when a readiness check fails, by config.health's check name.
SERVICE_ACTIONS = {
    "database": "Check that PostgreSQL runs, DATABASE_URL points at it, and `manage.py migrate` has run.",
    "redis": "Check that Redis runs and REDIS_URL points at it (caches and rate limits live there).",
    "broker": "Check that the Celery broker runs and CELERY_BROKER_URL points at it; nothing is indexed "
    "without it.",
    "vector_store": "Check that the vector store runs and VECTOR_STORES points at it; searches find nothing "
    "without it.",
    "workers": "Start a Celery worker for every queue (`celery -A config worker -Q crawl,index`); sources "
    "stay pending until one runs.",
}
SERVICE_NAMES = {
    "database": "PostgreSQL",
    "redis": "Redis",
    "broker": "The Celery broker",
    "vector_store": "The vector store",
    "workers": "The workers",
}


#: Errors that mean "nothing answered" (config.health names each by its exception class).
UNREACHABLE = ("ConnectionError", "OperationalError", "TimeoutError", "no answer in time")


def check_services() -> list[Finding]:
    report = health.readiness()
    findings = []
    for name in report["failed"]:
        error = report["checks"][name].get("error", "")
        label = SERVICE_NAMES.get(name, name)
        kind, _, message = error.partition(": ")
        action = SERVICE_ACTIONS.get(name, "")
        if name == "workers":  # the check's own words name the queues, or say nothing answered in time
            problem = f"{label} do not answer on every queue: {message or kind}."
            action = action.replace("crawl,index", ",".join(health.required_queues()))
        elif kind == "CheckFailed":  # it answered, but not as it should (e.g. migrations pending)
            problem = f"{label} answers, but: {message}."
        elif kind.startswith(UNREACHABLE):
            problem = f"{label} does not answer."
        else:  # the error's text may name addresses: it stays in the detail
            problem = f"{label} failed ({kind})."
        findings.append(Finding(name, ERROR, problem, action, error))
    return findings


def index_dimensions() -> int | None:
    """The vector size the configured store holds, when it can say (None: not created yet, or unknown)."""
    from config.backends import vector_stores
    from retrieval.stores.pgvector import PgVectorStore
    from retrieval.stores.qdrant import QdrantStore
    from sources.models import EMBEDDING_DIMENSIONS

    store = vector_stores["default"]
    if isinstance(store, PgVectorStore):
        return EMBEDDING_DIMENSIONS  # the column's type, fixed by the migration
    if isinstance(store, QdrantStore):
        # The store learns its collection's size when it opens it; this asks without creating one.
        return store._dimensions if store._ensure_collection(None) else None
    return None


def check_embedder() -> list[Finding]:
    from config.backends import embedders

    try:
        embedder = embedders["default"]
        vector = embedder.embed_query("doctor")
    except Exception as exc:
        message = getattr(exc, "message", "") or health._describe(exc)
        return [
            Finding(
                "embedder",
                ERROR,
                f"The embedder does not work: {message}",
                "Check EMBEDDERS (backend, base URL, API key, model, dimensions); nothing can be indexed "
                "or searched until it works.",
                getattr(exc, "detail", "") or health._describe(exc),
            )
        ]
    made = int(vector.shape[-1])
    if made != embedder.dimensions:
        return [
            Finding(
                "embedder",
                ERROR,
                f"The embedder makes {made}-dimensional vectors but is configured for {embedder.dimensions}.",
                "Set the embedder's dimensions to what its model makes (EMBEDDER_DIMENSIONS).",
            )
        ]
    try:
        held = index_dimensions()
    except Exception as exc:
        return [
            Finding(
                "embedder", WARNING, "The vector index's size could not be read.", "", health._describe(exc)
            )
        ]
    if held is not None and held != made:
        return [
            Finding(
                "embedder",
                ERROR,
                f"The embedder makes {made}-dimensional vectors but the index holds {held}.",
                "Go back to the embedding model the index was built with, or migrate the index to the new "
                "size and run `manage.py reindex`.",
            )
        ]
    return []


# --- the agent -----------------------------------------------------------------------------------------


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


DEPLOYMENT_CHECKS: tuple[Callable[[], list[Finding]], ...] = (check_embedder, check_services)
AGENT_CHECKS: tuple[Callable[[Agent], list[Finding]], ...] = (
    check_model,
    check_agent_embedder,
    check_sources,
    check_embeddings,
    check_knowledge,
    check_gate,
    check_origins,
)


def _guarded(name: str, run: Callable[[], list[Finding]]) -> list[Finding]:
    # A check that breaks is itself a finding; it must not hide the others.
    try:
        return run()
    except Exception as exc:
        return [Finding(name, ERROR, f"The {name} check could not run.", "", health._describe(exc))]


def diagnose(
    *, agent: Agent | None = None, deployment: bool = True, operator: bool = False
) -> dict[str, Any]:
    """{"status": "ok"|"warning"|"error", "checks": [...], "findings": [...]}, worst findings first.

    Deployment findings are shared by every workspace; their raw errors (hosts, ports, settings) are for
    the operator (`operator=True`, the management command), so workspace members get the problem and the
    action without them."""
    findings: list[Finding] = []
    checks: list[str] = []
    if deployment:
        for check in DEPLOYMENT_CHECKS:
            name = check.__name__.removeprefix("check_")
            checks.append(name)
            found = _guarded(name, check)
            findings += found if operator else [replace(f, detail="") for f in found]
    if agent is not None:
        with workspace_scope(agent.workspace_id):
            for agent_check in AGENT_CHECKS:
                name = agent_check.__name__.removeprefix("check_")
                checks.append(name)
                findings += _guarded(name, lambda c=agent_check: c(agent))
    findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    status = findings[0].severity if findings and findings[0].severity != INFO else "ok"
    return {"status": status, "checks": checks, "findings": [f.as_dict() for f in findings]}
