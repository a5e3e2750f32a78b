"""The semantic cache: per agent, a query close enough to a recent one reuses its hits.

Entries hold chunk ids and scores only, never answers or text, so a cached hit is still loaded (and
tenancy-checked) from the database. Keys carry the workspace and agent, and every entry records its
workspace, which is checked on read. Redis (the Django cache) shares entries across processes.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.core.cache import cache

from retrieval.stores.base import VectorHit


@dataclass(frozen=True)
class CachedHit:
    hit: VectorHit
    vector_score: float
    keyword_score: float


def params_key(params: dict) -> str:
    """Hits are only reused for the same search settings (top_k, floor, filters, mode...)."""
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _key(workspace_id: int, agent_id: int) -> str:
    return f"semcache:v1:{int(workspace_id)}:{int(agent_id)}"


def lookup(
    *, workspace_id: int, agent_id: int, vector: np.ndarray, params_key: str
) -> list[tuple[VectorHit, float, float]] | None:
    entries = cache.get(_key(workspace_id, agent_id)) or []
    now = time.time()
    best, best_similarity = None, -1.0
    for entry in entries:
        if entry["workspace_id"] != workspace_id or entry["params"] != params_key:
            continue
        if now - entry["at"] > settings.SEMANTIC_CACHE_TTL:
            continue
        similarity = float(np.dot(np.frombuffer(entry["vector"], dtype=np.float32), vector))
        if similarity > best_similarity:
            best, best_similarity = entry, similarity
    if best is None or best_similarity < settings.SEMANTIC_CACHE_THRESHOLD:
        return None
    return [(VectorHit(chunk_id=c, score=s), v, k) for c, s, v, k in best["hits"]]


def store(
    *,
    workspace_id: int,
    agent_id: int,
    vector: np.ndarray,
    params_key: str,
    hits: list[tuple[VectorHit, float, float]],
) -> None:
    key = _key(workspace_id, agent_id)
    now = time.time()
    entries = [e for e in (cache.get(key) or []) if now - e["at"] <= settings.SEMANTIC_CACHE_TTL]
    entries.append(
        {
            "workspace_id": workspace_id,
            "params": params_key,
            "at": now,
            "vector": np.asarray(vector, dtype=np.float32).tobytes(),
            "hits": [(h.chunk_id, h.score, v, k) for h, v, k in hits],
        }
    )
    cache.set(key, entries[-settings.SEMANTIC_CACHE_MAX_ENTRIES :], timeout=settings.SEMANTIC_CACHE_TTL)


def invalidate(*, workspace_id: int, agent_id: int) -> None:
    """Any ingest, refresh or delete of an agent's sources makes its cached hits stale."""
    cache.delete(_key(workspace_id, agent_id))
