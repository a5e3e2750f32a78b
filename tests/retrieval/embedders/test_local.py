"""The built-in embedder: a real model, loaded from installed packages, with no network."""

import time

import numpy as np
import pytest

from retrieval.embedders.local import (
    INFERENCE_BATCH,
    PADDING_SLACK,
    SMALL_BATCH_TOKENS,
    MiniLMOnnxEmbedder,
    padded_batches,
)
from retrieval.vectors import embed_parts


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


def test_a_batch_ends_before_a_row_that_would_pad_it_beyond_the_slack():
    # A small document's job: two chunks of 225 and 256 tokens and 28 sentences of 4-59 tokens.
    lengths = [256, 225, *range(4, 60, 2)]
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches = padded_batches(order, lengths)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))  # each row once
    assert [i for batch in batches for i in batch] == order  # in the order given
    for batch in batches:
        widths = [lengths[i] for i in batch]
        padded = max(widths) * len(batch)
        assert len(batch) <= INFERENCE_BATCH
        assert padded <= SMALL_BATCH_TOKENS or padded <= (1 + PADDING_SLACK) * sum(widths)
    # The sentences are not padded up to the chunks: a batch holding a chunk holds at most one other row
    # (below SMALL_BATCH_TOKENS a call costs more than its padding).
    for batch in batches:
        if max(lengths[i] for i in batch) >= 225:
            assert len(batch) <= 2, [lengths[i] for i in batch]
    assert len(batches) < len(lengths) / 5


def test_rows_of_one_length_fill_whole_batches():
    lengths = [128] * 70
    assert [len(b) for b in padded_batches(list(range(70)), lengths)] == [32, 32, 6]


def test_a_small_document_embeds_as_it_does_in_one_batch(embedder):
    texts = [
        "word " * 300,
        "a longer passage of the chunk " * 30,
        *(f"Sentence number {n} of it." for n in range(20)),
    ]
    cut = embedder.embed_documents(texts)
    alone = np.stack([embedder.embed_query(t) for t in texts])
    assert np.allclose(cut, alone, atol=1e-4)


def _texts_of_many_lengths(count: int) -> list[str]:
    return [f"passage {n} about kettles " + "and the shop in Lyon " * (n % 23) for n in range(count)]


def test_two_streams_give_the_vectors_of_one_in_the_same_order(embedder):
    texts = _texts_of_many_lengths(150)  # several batches, so both streams run
    streamed = MiniLMOnnxEmbedder(threads=2, streams=2)
    vectors = streamed.embed_documents(texts)
    # each stream on one thread; a lone batch (a question) on both
    assert streamed._stream_session.get_session_options().intra_op_num_threads == 1
    assert streamed._session.get_session_options().intra_op_num_threads == 2
    assert np.allclose(vectors, embedder.embed_documents(texts), atol=1e-4)
    # each row is its own text's vector, whichever stream made it
    assert np.allclose(vectors[7], embedder.embed_query(texts[7]), atol=1e-4)


def test_parts_come_back_in_order_each_as_its_own_embedding(embedder):
    texts = _texts_of_many_lengths(120)
    parts = [texts[:50], texts[50:51], texts[51:]]
    for layout in (MiniLMOnnxEmbedder(threads=2, streams=2), embedder):
        made = list(layout.embed_parts(parts))
        assert [len(m) for m in made] == [50, 1, 69]
        for part, vectors in zip(parts, made, strict=True):
            assert np.allclose(vectors, embedder.embed_documents(part), atol=1e-4)


class _Slow(MiniLMOnnxEmbedder):
    """Counts the batches it runs, each taking a moment, so batches are still queued when a caller stops."""

    def __init__(self, **options):  # type: ignore[no-untyped-def]
        super().__init__(**options)
        self.ran: list[int] = []  # appended to by both streams (a list's append is atomic)

    def _forward(self, rows, streamed=False):  # type: ignore[no-untyped-def]
        time.sleep(0.05)
        self.ran.append(len(rows))
        return super()._forward(rows, streamed)


def test_a_caller_that_stops_early_leaves_the_queued_batches_unrun():
    streamed = _Slow(threads=2, streams=2)
    parts = [[f"part {n} text {k}" for k in range(32)] for n in range(20)]
    made = streamed.embed_parts(parts)
    next(made)
    made.close()  # as indexing does when a part fails
    streamed._streamed().shutdown(wait=True)  # what was running when it stopped has finished
    # 20 batches were queued (a part of 32 alike rows is one batch); the first and those running beside
    # it ran, the rest were cancelled
    assert 1 <= len(streamed.ran) <= 4


def test_batches_are_queued_when_the_parts_are_asked_for_and_cancelled_on_close():
    # An index job queues its chunks and cuts their sentences meanwhile (ingestion.indexing); a job that
    # fails before it reads any part leaves nothing behind it.
    streamed = _Slow(threads=2, streams=2)
    parts = [[f"part {n} text {k}" for k in range(32)] for n in range(20)]
    made = embed_parts(parts, streamed)
    deadline = time.monotonic() + 10
    while not streamed.ran and time.monotonic() < deadline:
        time.sleep(0.01)
    assert streamed.ran  # running before the first part was read
    made.close()
    streamed._streamed().shutdown(wait=True)
    assert 1 <= len(streamed.ran) <= 4
    assert list(made) == []


def _embed_in_child(embedder, texts, out):  # type: ignore[no-untyped-def]
    out.put(embedder.embed_documents(texts))


def test_a_forked_worker_embeds_with_streams_of_its_own():
    # A prefork worker inherits the parent's pool without its threads: batches queued there never ran.
    import multiprocessing

    texts = _texts_of_many_lengths(100)
    streamed = MiniLMOnnxEmbedder(threads=2, streams=2)
    parent = streamed.embed_documents(texts)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_embed_in_child, args=(streamed, texts, out))
    child.start()
    try:
        assert np.allclose(out.get(timeout=60), parent, atol=1e-5)
    finally:
        child.join(timeout=10)
        child.kill()


class _Recording(MiniLMOnnxEmbedder):
    def __init__(self, **options):  # type: ignore[no-untyped-def]
        super().__init__(**options)
        self.streamed: list[bool] = []

    def _forward(self, rows, streamed=False):  # type: ignore[no-untyped-def]
        self.streamed.append(streamed)
        return super()._forward(rows, streamed)


def test_a_lone_batch_runs_on_every_thread_and_several_on_the_streams():
    embedder = _Recording(threads=2, streams=2)
    embedder.embed_documents(["how do I reset my password?"])
    list(embedder.embed_parts([["a short page"], []]))  # one batch in all: a short page's job
    assert embedder.streamed == [False, False]
    list(embedder.embed_parts([_texts_of_many_lengths(40), _texts_of_many_lengths(40)]))
    assert embedder.streamed[2:] and all(embedder.streamed[2:])
