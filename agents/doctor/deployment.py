"""The doctor's deployment checks: the embedder and the services every agent needs (PostgreSQL, Redis, the
broker, the vector store, the workers), through the readiness checks of config/health.py so /readyz and the
doctor never disagree."""

from __future__ import annotations

from agents.doctor.findings import ERROR, WARNING, Finding
from config import health

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
