from itertools import pairwise

from ingestion.text.chunking import chunk_id, chunk_text


def paragraph(n: int, words: int = 40) -> str:
    return " ".join(f"word{n}_{i}" for i in range(words)) + "."


def test_short_text_is_one_chunk():
    assert [c.text for c in chunk_text("Hello there. How are you?")] == ["Hello there. How are you?"]


def test_empty_text_gives_no_chunks():
    assert chunk_text("  \n\n ") == []


def test_paragraphs_are_packed_up_to_the_target_and_never_cut_mid_paragraph():
    paragraphs = [paragraph(n) for n in range(30)]  # ~450 characters each
    chunks = chunk_text("\n\n".join(paragraphs), target_chars=1000, overlap_chars=0)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 1000
        for piece in chunk.text.split("\n\n"):
            assert piece in paragraphs
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_a_long_paragraph_falls_back_to_sentences():
    sentences = [f"Sentence number {i} says something about topic {i}." for i in range(100)]
    chunks = chunk_text(" ".join(sentences), target_chars=500, overlap_chars=0)
    assert all(len(c.text) <= 500 for c in chunks)
    for chunk in chunks:
        assert chunk.text.endswith(".")  # cut at a sentence boundary, not mid-sentence


def test_overlap_carries_the_last_sentence_into_the_next_chunk():
    sentences = [f"Fact {i} is stated here." for i in range(200)]
    chunks = chunk_text(" ".join(sentences), target_chars=400, overlap_chars=60)
    for prev, nxt in pairwise(chunks):
        last_sentence = prev.text.split(". ")[-1].rstrip(".")
        assert last_sentence in nxt.text


def test_text_without_boundaries_uses_a_character_window():
    chunks = chunk_text("x" * 5000, target_chars=1000, overlap_chars=0)
    assert len(chunks) == 5 and all(len(c.text) == 1000 for c in chunks)


def test_headings_start_new_chunks():
    text = "# Install\n\nRun the installer.\n\n# Configure\n\nEdit the settings file."
    chunks = chunk_text(text, target_chars=2000)
    assert [c.text.splitlines()[0] for c in chunks] == ["# Install", "# Configure"]


def test_chunk_ids_are_stable_for_the_same_text():
    assert chunk_id(1, 0, "abc") == chunk_id(1, 0, "abc")
    assert chunk_id(1, 0, "abc") != chunk_id(1, 0, "abd")
    assert chunk_id(1, 0, "abc") != chunk_id(2, 0, "abc")


def test_record_mode_packs_whole_records_and_never_splits_one():
    rows = [f'{{"id": {i}, "name": "customer {i}", "note": "{"x" * (i % 7) * 20}"}}' for i in range(60)]
    chunks = chunk_text("\n".join(rows), target_chars=500, separator="\n")
    rebuilt = [row for chunk in chunks for row in chunk.text.split("\n")]
    assert rebuilt == rows  # every record once, whole, in order, with no overlap
    assert all(len(c.text) <= 500 for c in chunks)
    assert len(chunks) > 5


def test_record_mode_keeps_an_oversized_record_whole():
    big = "y" * 900
    chunks = chunk_text(f"a\n{big}\nb", target_chars=500, separator="\n")
    assert [c.text for c in chunks] == ["a", big, "b"]


def test_lines_of_a_long_section_stay_lines():
    """An extracted page puts each list item and code line on a line of its own, with no blank line
    between: cut at sentences and put back with spaces, a list became one run-on line
    ("... Default: 2. - nav_style: ...") and code lost its lines."""
    items = [f"- option_{i}: What option {i} does, in a sentence. Default: {i}." for i in range(60)]
    code = [f"    call_{i}(argument={i})" for i in range(20)]
    text = "\n".join(["Options:", *items, "For example:", *code])
    chunks = chunk_text(text, target_chars=1000, overlap_chars=200)
    assert len(chunks) > 3
    lines = set(text.split("\n"))
    for chunk in chunks:
        assert len(chunk.text) <= 1000
        for line in chunk.text.split("\n"):
            assert line in lines or any(other.endswith(line) for other in lines), line
    # The overlap carries whole lines too: a chunk starts with the previous chunk's last item(s).
    assert chunks[1].text.startswith("- option_")
    assert all(item in "\n".join(c.text for c in chunks) for item in items)
