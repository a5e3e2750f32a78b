"""The sentence-vector rescoring answers to the search's own fusion and retriever weights (issue #56): an
agent tuned to keyword only, vector only or rank fusion gets that ranking, and an agent at the
deployment's weights gets exactly the ranking the rescoring was tuned for. Real embedder, PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest

from agents.configuration import agent_search_params
from retrieval import sentences
from retrieval.services import SearchParams, search_passages
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db

TUNED = (0.2, 0.3, 0.5)  # the deployment's SEARCH_SENTENCE_WEIGHTS
QUESTION = "when does the Lyon shop close on a public holiday?"
# Pages that keywords and meaning rank differently: word echoes without the fact, the fact paraphrased.
DOCS = {
    "Echo": "Lyon shop, Lyon shop close, public holiday shop list: shop Lyon holiday public close shop.",
    "Paraphrase": "Our store in the city of Lyon shuts at midday on bank holidays and reopens the next day.",
    "Kettle guide": "The kettle body is brushed steel. It holds one point seven litres. Our Lyon shop "
    "closes at noon on public holidays. A blue light shows while it heats.",
    "Dates": "Public holiday dates for France are listed in the calendar each year.",
}


def _old_rescore(order, vector_scores, keyword_scores, sentence_scores, candidates):
    """The rescoring as it was before issue #56, at the deployment's weights: the reference the default
    must still reproduce exactly."""
    head, tail = order[:candidates], order[candidates:]
    chunk_w, sentence_w, keyword_w = TUNED

    def score(cid):
        cosine = max(vector_scores.get(cid, 0.0), 0.0)
        sentence = max(sentence_scores.get(cid, cosine), 0.0)
        return chunk_w * cosine + sentence_w * sentence + keyword_w * keyword_scores.get(cid, 0.0)

    scored = {cid: score(cid) for cid in head}
    return sorted(head, key=lambda cid: -scored[cid]) + tail


def test_at_the_deployments_weights_the_rescoring_is_exactly_as_tuned(settings):
    settings.SEARCH_VECTOR_WEIGHT, settings.SEARCH_KEYWORD_WEIGHT = 0.4, 0.6
    assert sentences.search_weights(TUNED, vector_weight=0.4, keyword_weight=0.6) == TUNED
    rng = np.random.default_rng(56)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        order = [f"c{i}" for i in rng.permutation(n)]
        # Coarse scores make ties common, so the tie order is checked too; some chunks lack sentences.
        vector = {c: float(rng.integers(-2, 10)) / 10 for c in order}
        keyword = {c: float(rng.integers(0, 5)) / 4 for c in order if rng.random() < 0.7}
        sentence = {c: float(rng.integers(0, 10)) / 10 for c in order if rng.random() < 0.8}
        weights = sentences.search_weights(TUNED, vector_weight=0.4, keyword_weight=0.6)
        new = sentences.rescore(
            order,
            vector_scores=vector,
            keyword_scores=keyword,
            sentence_scores=sentence,
            weights=weights,
            candidates=20,
        )
        assert new == _old_rescore(order, vector, keyword, sentence, 20)


def test_the_retriever_weights_scale_their_own_terms(settings):
    settings.SEARCH_VECTOR_WEIGHT, settings.SEARCH_KEYWORD_WEIGHT = 0.4, 0.6
    assert sentences.search_weights(TUNED, vector_weight=0.0, keyword_weight=1.0) == (0.0, 0.0, 0.5 / 0.6)
    assert sentences.search_weights(TUNED, vector_weight=0.8, keyword_weight=0.0) == (0.4, 0.6, 0.0)
    # the same ratio at another scale: the same order
    assert sentences.search_weights(TUNED, vector_weight=0.8, keyword_weight=1.2) == (0.4, 0.6, 1.0)
    # a deployment that weighs keywords 0 has no ratio to keep: a search that weighs them gets 0.5
    settings.SEARCH_KEYWORD_WEIGHT = 0.0
    assert sentences.search_weights(TUNED, vector_weight=0.4, keyword_weight=0.3) == TUNED
    assert sentences.search_weights(TUNED, vector_weight=0.4, keyword_weight=0.0) == (0.2, 0.3, 0.0)


def test_under_rank_fusion_the_head_is_ordered_by_ranks_not_by_score_sizes():
    order = ["a", "b", "c"]
    # a's keyword score dwarfs the rest; by ranks it is one first place against b's two.
    common = {
        "vector_scores": {"a": 0.10, "b": 0.40, "c": 0.30},
        "keyword_scores": {"a": 1.00, "b": 0.05, "c": 0.0},
        "sentence_scores": {"a": 0.10, "b": 0.40, "c": 0.30},
        "weights": (1.0, 1.0, 1.0),
        "candidates": 3,
    }
    assert sentences.rescore(order, **common) == ["a", "b", "c"]  # sums 1.2, 0.85, 0.6
    assert sentences.rescore(order, **common, by_rank=True) == ["b", "a", "c"]


@pytest.fixture
def indexed(workspace, agent, settings):
    settings.SENTENCE_VECTORS = True
    settings.SEARCH_FUSION, settings.SEARCH_VECTOR_WEIGHT, settings.SEARCH_KEYWORD_WEIGHT = "score", 0.4, 0.6
    settings.SEARCH_SENTENCE_WEIGHTS = TUNED
    for title, text in DOCS.items():
        index_text(workspace, agent, title, text)
    return workspace, agent


def _search(workspace, agent, **knobs):
    """The agent's passages for QUESTION with its knobs set, as its chat searches."""
    with workspace_scope(workspace.id):
        for name, value in knobs.items():
            setattr(agent, name, value)
        agent.save()
        params = agent_search_params(agent, [])
    params = SearchParams(**{**params.__dict__, "top_k": len(DOCS), "semantic_cache": False})
    return search_passages(workspace_id=workspace.id, query=QUESTION, params=params)


def test_a_keyword_only_agent_ranks_by_keywords_and_a_vector_only_one_ignores_them(indexed):
    workspace, agent = indexed
    by_keyword = _search(workspace, agent, vector_weight=0.0, keyword_weight=1.0)
    scores = [p.keyword_score for p in by_keyword]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    by_vector = _search(workspace, agent, vector_weight=1.0, keyword_weight=0.0)
    assert [p.source_title for p in by_vector] != [p.source_title for p in by_keyword]
    # Not affected by keyword scores: the same order as a rescoring with no keyword term at all.
    with workspace_scope(workspace.id):
        params = agent_search_params(agent, [])
    knobs = {"top_k": len(DOCS), "semantic_cache": False, "sentence_weights": (0.2, 0.3, 0.0)}
    params = SearchParams(**{**params.__dict__, **knobs})
    no_keywords = search_passages(workspace_id=workspace.id, query=QUESTION, params=params)
    assert [p.chunk_id for p in by_vector] == [p.chunk_id for p in no_keywords]


def test_an_agent_at_the_default_weights_ranks_as_the_deployment(indexed):
    workspace, agent = indexed
    default = _search(workspace, agent, vector_weight=None, keyword_weight=None, fusion="")
    explicit = _search(workspace, agent, vector_weight=0.4, keyword_weight=0.6, fusion="score")
    assert [p.chunk_id for p in default] == [p.chunk_id for p in explicit]
