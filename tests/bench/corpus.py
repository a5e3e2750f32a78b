"""A synthetic corpus for the scale benchmark: clustered 384-dimensional vectors and Zipf-distributed text.

Vectors: 1,000 gaussian cluster centres on the unit sphere; a chunk is its centre plus gaussian noise
whose variance decays over the dimensions (real sentence embeddings concentrate their variance in a few
dozen directions; isotropic noise in 384 dimensions is far harder for a graph index than real data),
normalised. Two chunks of one cluster have a cosine near 0.5, chunks of different clusters near 0.

Text: ~30 words drawn from a Zipf law (s = 1) over a vocabulary whose head is the English stop list, as
in real text, where about half the tokens are stop words; the rest are 50,000 made-up words. The
tokenizer drops the stop words, so the BM25 postings follow the long tail of content words.

Everything is deterministic: block `b` (chunks b*BLOCK .. b*BLOCK+BLOCK-1) comes from its own seeded
generator, so a block can be made again instead of keeping a million chunks in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from retrieval.keyword import STOP_WORDS

DIMENSIONS = 384
BLOCK = 1000
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]


@dataclass(frozen=True)
class Block:
    start: int
    vectors: np.ndarray  # (n, DIMENSIONS) float32, unit length
    texts: list[str]


@dataclass(frozen=True)
class Query:
    chunk_index: int
    vector: np.ndarray
    text: str


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


class SyntheticCorpus:
    def __init__(
        self,
        size: int,
        *,
        seed: int = 20250601,
        clusters: int = 1000,
        spread: float = 1.0,
        spectrum_decay: float = 1.0,
        words_per_chunk: int = 30,
        content_words: int = 50_000,
    ) -> None:
        self.size, self.seed, self.words_per_chunk = size, seed, words_per_chunk
        rng = np.random.default_rng([seed, 0])
        self.centres = unit_rows(rng.standard_normal((clusters, DIMENSIONS)))
        # Noise standard deviation per dimension, ~ j^(-decay/2), scaled so the noise has norm `spread`.
        scale = np.arange(1, DIMENSIONS + 1, dtype=np.float64) ** (-spectrum_decay / 2)
        self.noise_scale = (scale * spread / np.sqrt((scale**2).sum())).astype(np.float32)
        self.vocabulary = np.array(sorted(STOP_WORDS) + made_up_words(content_words, rng))
        ranks = np.arange(1, len(self.vocabulary) + 1, dtype=np.float64)
        self.cdf = np.cumsum(1 / ranks) / np.sum(1 / ranks)

    @property
    def blocks(self) -> int:
        return -(-self.size // BLOCK)

    def block(self, index: int) -> Block:
        start = index * BLOCK
        n = min(BLOCK, self.size - start)
        rng = np.random.default_rng([self.seed, 1, index])
        clusters = rng.integers(0, len(self.centres), n)
        noise = rng.standard_normal((n, DIMENSIONS), dtype=np.float32) * self.noise_scale
        vectors = unit_rows(self.centres[clusters] + noise)
        word_ids = np.searchsorted(self.cdf, rng.random((n, self.words_per_chunk)))
        words = self.vocabulary[np.minimum(word_ids, len(self.vocabulary) - 1)]
        return Block(start=start, vectors=vectors, texts=[" ".join(row) for row in words.tolist()])

    def queries(self, count: int, *, spread: float = 0.5, among: list[int] | None = None) -> list[Query]:
        """A query per sampled chunk (of `among`, or of all): its vector plus noise (cosine ~0.9 to the
        chunk) and 2-3 of its content words, so the chunk is relevant to both retrievers."""
        rng = np.random.default_rng([self.seed, 2])
        pool = np.arange(self.size) if among is None else np.array(among)
        indexes = np.sort(rng.choice(pool, size=min(count, len(pool)), replace=False))
        queries = []
        cache: dict[int, Block] = {}
        for index in indexes.tolist():
            block = cache.setdefault(index // BLOCK, self.block(index // BLOCK))
            vector = block.vectors[index - block.start]
            noise = rng.standard_normal(DIMENSIONS).astype(np.float32)
            noisy = vector + noise * (spread / np.linalg.norm(noise))
            content = sorted({w for w in block.texts[index - block.start].split() if w not in STOP_WORDS})
            picked = rng.choice(content, size=min(len(content), int(rng.integers(2, 4))), replace=False)
            queries.append(
                Query(chunk_index=index, vector=unit_rows(noisy[None])[0], text=" ".join(picked.tolist()))
            )
        rng.shuffle(queries)  # the order the queries are run in, not sorted by position
        return queries


def made_up_words(count: int, rng: np.random.Generator) -> list[str]:
    """Pronounceable nonsense words of 2-4 syllables, unique and never a stop word."""
    words: set[str] = set()
    while len(words) < count:
        length = int(rng.integers(2, 5))
        word = "".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), length))
        if word not in STOP_WORDS:
            words.add(word)
    ordered = sorted(words)  # a set's order changes per process; the Zipf rank must not
    return [ordered[i] for i in rng.permutation(len(ordered))]
