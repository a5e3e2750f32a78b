"""pysbd's patterns compiled once: the same sentences as plain pysbd, and no compiling the second time."""

import sys

import pysbd
import pytest

from ingestion.text import pysbd_patterns
from ingestion.text.segment import sentences
from tests.factories import pysbd_on_plain_re

PARAGRAPHS = [
    "Returns are accepted within 30 days of purchase. Refunds take 3.5 days on average, e.g. by card.",
    'Dr. Smith met Mr. J. R. R. Tolkien at 9 a.m. in the U.S. He said: "It\'s fine." Then he left.',
    "Set SERVER_NAME (default: None). See flask.palletsprojects.com for details. Version 2.3 added it.",
    "The list: i. first item. ii. second item. Prof. Jones, Ph.D., agreed. Fig. 3 shows it. No. 5 is next.",
    "Call app.run() to serve it. Use e.g. the .env file, i.e. a local one! Does it work? Yes.",
]


def plain(text: str) -> list[str]:
    """pysbd with the real `re` module, as it ships."""
    with pysbd_on_plain_re():
        return [s.strip() for s in pysbd.Segmenter(language="en", clean=False).segment(text) if s.strip()]


@pytest.mark.parametrize("text", PARAGRAPHS)
def test_the_sentences_are_plain_pysbds(text):
    cached = [s.strip() for s in pysbd_patterns.segmenter("en").segment(text) if s.strip()]
    assert cached == plain(text)
    assert len(cached) > 1


def test_every_pysbd_module_that_uses_re_gets_the_stand_in():
    pysbd_patterns.segmenter("en")
    users = [m for n, m in sys.modules.items() if n.startswith("pysbd") and hasattr(m, "re")]
    assert len(users) >= 5  # abbreviation_replacer, processor, segmenter, utils, the languages ...
    assert all(m.re is pysbd_patterns.RE for m in users)


def test_a_paragraph_segmented_again_compiles_nothing():
    text = PARAGRAPHS[1] + " It costs $3.50, approx. half."
    sentences(text)
    before = pysbd_patterns.compiled.cache_info()
    assert sentences(text) == sentences(text)
    after = pysbd_patterns.compiled.cache_info()
    assert after.misses == before.misses
    assert after.hits > before.hits  # pysbd's calls did go through the stand-in
