"""The built-in embedder: a real model, loaded from installed packages, with no network."""

import numpy as np
import pytest

from retrieval.embedders.local import MiniLMOnnxEmbedder


@pytest.fixture(scope="module")
def embedder():
    return MiniLMOnnxEmbedder()


def test_vectors_are_unit_length_with_384_dimensions(embedder):
    vectors = embedder.embed_documents(["first passage", "a second, longer passage of text", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrases_are_closer_than_unrelated_text(embedder):
    question, paraphrase, unrelated = embedder.embed_documents(
        [
            "How do I reset my password?",
            "Steps to change your account password",
            "The tide comes in twice a day.",
        ]
    )
    assert question @ paraphrase > 0.6
    assert question @ unrelated < 0.2


def test_batch_order_and_padding_do_not_change_a_vector(embedder):
    texts = ["short", "a much longer text " * 20, "medium length text here"]
    together = embedder.embed_documents(texts)
    alone = np.stack([embedder.embed_query(t) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_no_texts_gives_an_empty_matrix(embedder):
    assert embedder.embed_documents([]).shape == (0, 384)


def test_spinning_threads_give_the_same_vectors(embedder):
    # EMBEDDER_SPINNING only changes how idle ONNX threads wait between operations, never the result.
    texts = ["first passage", "a second, longer passage of text " * 20]
    spinning = MiniLMOnnxEmbedder(spinning=True)
    assert np.allclose(spinning.embed_documents(texts), embedder.embed_documents(texts), atol=1e-5)
    assert (
        spinning._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
        == "1"
    )


def test_input_sizes_are_tokens_up_to_the_limit_and_the_counted_texts_embed_the_same(embedder):
    # Code makes more tokens per character than prose: the order by size is the model's, not by length.
    prose, code, long = "Returns are accepted within thirty days.", "x=f(a[0],b[1]);y=g(**k)", "word " * 400
    assert len(code) < len(prose)
    sizes = embedder.input_sizes([prose, code, long])
    assert sizes[1] > sizes[0] and sizes[2] == 256
    # The ids counted are used once by the next call, which gives what a fresh embedder gives.
    counted = embedder.embed_documents([long, prose, code])
    assert not embedder._counted
    assert np.allclose(counted, MiniLMOnnxEmbedder().embed_documents([long, prose, code]), atol=1e-6)
