"""Two caches of search hits in Redis (the Django cache), shared across processes.

The semantic cache: per agent, a query close enough to a recent one reuses its hits (the widget).
Its entries hold chunk ids and scores only, so a hit's passages are still loaded (and tenancy-checked)
from the database.

The search cache: per workspace, the same question with the same settings reuses the answer (the
search API), passages included, until the workspace's knowledge changes: anything a passage shows
(chunk text and metadata, a source's or a document's title, a document's URL) bumps the workspace's
generation when it changes (`searches_changed`). A hit then costs one Redis round trip and no query.

Keys carry the workspace (and agent), and every entry records its workspace, which is checked on read.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from config.redis_cache import Alongside, get_many_alongside
from retrieval.stores.base import VectorHit


@dataclass(frozen=True)
class CachedHit:
    hit: VectorHit
    vector_score: float
    keyword_score: float


@dataclass(frozen=True)
class CachePolicy:
    """An agent's semantic cache knobs, each defaulting to the deployment's SEMANTIC_CACHE_* setting."""

    enabled: bool = True
    threshold: float | None = None
    max_entries: int | None = None
    ttl: int | None = None

    @classmethod
    def of(cls, params: Any) -> CachePolicy:
        """From a search's parameters (retrieval.params.SearchParams)."""
        return cls(
            enabled=params.semantic_cache,
            threshold=params.cache_threshold,
            max_entries=params.cache_max_entries,
            ttl=params.cache_ttl,
        )

    @property
    def similarity(self) -> float:
        return settings.SEMANTIC_CACHE_THRESHOLD if self.threshold is None else self.threshold

    @property
    def entries(self) -> int:
        return settings.SEMANTIC_CACHE_MAX_ENTRIES if self.max_entries is None else self.max_entries

    @property
    def seconds(self) -> int:
        return settings.SEMANTIC_CACHE_TTL if self.ttl is None else self.ttl


DEFAULT_POLICY = CachePolicy()


#: The cache's own knobs among a search's parameters: they decide whether hits are reused, not which.
POLICY_FIELDS = frozenset({"semantic_cache", "cache_threshold", "cache_max_entries", "cache_ttl"})


def params_key(params: dict) -> str:
    """Hits are only reused for the same search settings (top_k, floor, filters, mode...)."""
    searched = {name: value for name, value in params.items() if name not in POLICY_FIELDS}
    return hashlib.sha256(json.dumps(searched, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _key(workspace_id: int, agent_id: int) -> str:
    return f"semcache:v1:{int(workspace_id)}:{int(agent_id)}"


def lookup(
    *,
    workspace_id: int,
    agent_id: int,
    vector: np.ndarray,
    params_key: str,
    policy: CachePolicy = DEFAULT_POLICY,
) -> list[tuple[VectorHit, float, float]] | None:
    entries = cache.get(_key(workspace_id, agent_id)) or []
    now = time.time()
    best, best_similarity = None, -1.0
    for entry in entries:
        if entry["workspace_id"] != workspace_id or entry["params"] != params_key:
            continue
        if now - entry["at"] > policy.seconds:
            continue
        similarity = float(np.dot(np.frombuffer(entry["vector"], dtype=np.float32), vector))
        if similarity > best_similarity:
            best, best_similarity = entry, similarity
    if best is None or best_similarity < policy.similarity:
        return None
    return [(VectorHit(chunk_id=c, score=s), v, k) for c, s, v, k in best["hits"]]


def store(
    *,
    workspace_id: int,
    agent_id: int,
    vector: np.ndarray,
    params_key: str,
    hits: list[tuple[VectorHit, float, float]],
    policy: CachePolicy = DEFAULT_POLICY,
) -> None:
    key = _key(workspace_id, agent_id)
    now = time.time()
    entries = [e for e in (cache.get(key) or []) if now - e["at"] <= policy.seconds]
    entries.append(
        {
            "workspace_id": workspace_id,
            "params": params_key,
            "at": now,
            "vector": np.asarray(vector, dtype=np.float32).tobytes(),
            "hits": [(h.chunk_id, h.score, v, k) for h, v, k in hits],
        }
    )
    cache.set(key, entries[-policy.entries :], timeout=policy.seconds)


def invalidate(*, workspace_id: int, agent_id: int) -> None:
    """Any ingest, refresh or delete of an agent's sources makes its cached hits stale, and the
    workspace's searches with them."""
    cache.delete(_key(workspace_id, agent_id))
    invalidate_searches(workspace_id=workspace_id)


# --- the search cache -------------------------------------------------------------------------------
#
# A workspace has a generation, a random token replaced whenever its sources change. An answer is stored
# with the generation read before its search ran, and only served while that is still the workspace's:
# invalidating is one write, however many answers are cached, and an answer computed from data that
# changed while it was searched is never served. A token, not a counter: an evicted counter would
# start again at a value old answers carry.


@dataclass(frozen=True)
class CachedSearch:
    #: the passages as the search returned them, each a dict of retrieval.passages.Passage's fields
    passages: list[dict[str, Any]]
    #: chunks embedded by another model than the current one (the reindex notice)
    stale_chunks: int


def search_key(question: dict[str, Any]) -> str:
    """The query, the search settings and the embedding model: an answer is reused for exactly these."""
    return hashlib.sha256(json.dumps(question, sort_keys=True, default=str).encode()).hexdigest()


def _generation_key(workspace_id: int) -> str:
    return f"searchcache:v1:{int(workspace_id)}:generation"


def _search_entry_key(workspace_id: int, key: str) -> str:
    return f"searchcache:v1:{int(workspace_id)}:{key}"


class SearchLookup(NamedTuple):
    #: the workspace's current generation; None when the cache is off (or a new one could not be read back)
    generation: str | None
    #: the answer cached for the question under that generation
    cached: CachedSearch | None
    #: what a search of the workspace needs besides its hits, as of that generation
    facts: WorkspaceFacts | None


@dataclass(frozen=True)
class WorkspaceFacts:
    """True of a workspace for one generation: every change to either replaces the generation (pausing a
    source with "leave out of search" does; chunks change model only when they are written)."""

    #: sources paused with "leave out of search"
    hidden_sources: frozenset[int]
    #: chunks embedded by another model than the deployment's (the reindex notice)
    stale_chunks: int


def _facts_key(workspace_id: int, model_name: str) -> str:
    # The deployment's model is part of the key: it changes on a restart, not with the generation.
    model = hashlib.sha256(model_name.encode()).hexdigest()[:16]
    return f"searchcache:v1:{int(workspace_id)}:facts:{model}"


def search_lookup(
    *, workspace_id: int, key: str | None, model_name: str = "", alongside: Alongside | None = None
) -> SearchLookup:
    """The workspace's generation, the answer cached for `key` under it (None: no answer is looked for, as
    for an agent's chat, which is not itself cached) and the workspace's facts, in one round trip;
    `alongside`'s commands go in the same one (the cache must share settings.REDIS_URL)."""
    if settings.SEARCH_CACHE_TTL <= 0:
        if alongside is not None:
            get_many_alongside([], alongside)
        return SearchLookup(None, None, None)
    generation_key, facts_key = _generation_key(workspace_id), _facts_key(workspace_id, model_name)
    entry_key = None if key is None else _search_entry_key(workspace_id, key)
    keys = [generation_key, facts_key] + ([entry_key] if entry_key else [])
    found = cache.get_many(keys) if alongside is None else get_many_alongside(keys, alongside)
    generation = found.get(generation_key)
    if generation is None:
        return SearchLookup(_first_generation(workspace_id), None, None)
    facts = found.get(facts_key)
    facts = facts["facts"] if facts and facts["generation"] == generation else None
    entry = found.get(entry_key) if entry_key else None
    if not entry or entry["workspace_id"] != workspace_id or entry["generation"] != generation:
        return SearchLookup(generation, None, facts)
    if any(p["workspace_id"] != workspace_id for p in entry["passages"]):
        return SearchLookup(generation, None, facts)
    cached = CachedSearch(passages=entry["passages"], stale_chunks=entry["stale_chunks"])
    return SearchLookup(generation, cached, facts)


def _first_generation(workspace_id: int) -> str | None:
    """A workspace's generation when it has none yet (None if a new one could not be read back)."""
    generation_key = _generation_key(workspace_id)
    cache.add(generation_key, uuid.uuid4().hex, timeout=None)  # another process may win: read it back
    return cache.get(generation_key)


def facts_store(*, workspace_id: int, generation: str, model_name: str, facts: WorkspaceFacts) -> None:
    """Keep the workspace's facts as read after `generation` was: served only while it is current."""
    entry = {"generation": generation, "facts": facts}
    cache.set(_facts_key(workspace_id, model_name), entry, timeout=settings.SEARCH_CACHE_TTL)


def search_store(
    *,
    workspace_id: int,
    key: str,
    generation: str,
    passages: list[dict[str, Any]],
    stale_chunks: int,
) -> None:
    """Keep a search's passages (dicts, each recording its workspace) under the generation read before
    the search ran."""
    entry = {
        "workspace_id": workspace_id,
        "generation": generation,
        "passages": [{**p, "workspace_id": workspace_id} for p in passages],
        "stale_chunks": stale_chunks,
    }
    cache.set(_search_entry_key(workspace_id, key), entry, timeout=settings.SEARCH_CACHE_TTL)


def invalidate_searches(*, workspace_id: int) -> None:
    """The workspace's knowledge changed: no answer cached before now is served again."""
    cache.set(_generation_key(workspace_id), uuid.uuid4().hex, timeout=None)


def searches_changed(workspace_id: int) -> None:
    """Something a search finds or shows is changing in the current transaction. Invalidated now, and
    again when it commits: an answer cached in between (from the data before it) carries the generation
    that the commit replaces, so it is never served."""
    invalidate_searches(workspace_id=workspace_id)
    transaction.on_commit(lambda: invalidate_searches(workspace_id=workspace_id))
