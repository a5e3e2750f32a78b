"""Which embedder embeds an agent's passages and questions: the deployment's (EMBEDDERS["default"]), or one
the agent chose (settings.AGENT_EMBEDDER_RESOLVER, a function of a layer above that returns an Embedder or
None). Chunks and queries of one agent always go through the same function, so they share a vector space,
and its model name is what the store records and matches on."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q
from django.utils.module_loading import import_string

from config.backends import embedders
from retrieval.embedders.base import Embedder


def embedder_for(agent_id: int | None) -> Embedder:
    resolver = getattr(settings, "AGENT_EMBEDDER_RESOLVER", "")
    if agent_id is not None and resolver:
        chosen = import_string(resolver)(agent_id)
        if chosen is not None:
            return chosen
    return embedders["default"]


def agent_models(workspace_id: int) -> dict[int, str]:
    """The model name of every agent of the workspace that has its own embedder."""
    resolver = getattr(settings, "AGENT_EMBEDDING_MODELS_RESOLVER", "")
    return dict(import_string(resolver)(workspace_id)) if resolver else {}


def embedded_by_another_model(workspace_id: int) -> Q:
    """Chunks whose vector came from another model than the one of record: the agent's own embedder for
    agents that have one, the deployment's for the others. Chunks not embedded yet are not counted."""
    default = embedders["default"].model_name
    own = agent_models(workspace_id)
    # "< default or > default": two range scans of the (workspace, embedding_model) index.
    stale = Q(embedding_model__lt=default) | Q(embedding_model__gt=default)
    if own:
        stale &= ~Q(source__agent_id__in=list(own))
    for agent_id, model_name in own.items():
        stale |= Q(source__agent_id=agent_id) & ~Q(embedding_model=model_name)
    return stale & ~Q(embedding_model="")
